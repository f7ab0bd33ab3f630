package topics_test

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
)

// TestReplicaSeesTopicChanges: a second replica (its own catalog and
// manager, the same store) takes in, within its sync interval, a topic
// enabled through the first (its table becomes owned there too: an
// external write through it is refused), an update of its config, and
// its release. Before the records were synced, the second replica did
// not know the topic until restart, and let external writers into the
// table it does not own.
func TestReplicaSeesTopicChanges(t *testing.T) {
	e := newEnv(t)
	catB, err := catalog.New(catalog.Config{Store: e.store, Warehouses: []*catalog.Warehouse{e.wh}})
	require.NoError(t, err)
	b, err := topics.New(topics.Deps{Catalog: catB, Warehouse: e.wh, Store: e.store, Logger: e.log,
		Metrics: prometheus.NewRegistry(), SyncInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, b.Start(e.ctx))
	t.Cleanup(func() { _ = b.Close(e.ctx) })
	externalB := func() error {
		_, err := catB.CommitTable(e.ctx, e.wh, catalog.TableCommit{Ident: tableIdent,
			Updates: []table.Update{table.NewSetPropertiesUpdate(map[string]string{"external": "yes"})}})
		return err
	}

	e.enable(nil)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st, err := b.Get(e.ctx, testTopic)
		require.NoError(c, err)
		assert.Equal(c, int64(1000), st.Config.TargetLagMs)
	}, waitTimeout, 10*time.Millisecond, "replica B knows the topic enabled through A")
	require.ErrorIs(t, externalB(), catalog.ErrTableOwnedForbidden, "the table is owned on B too")

	lag := int64(4000)
	_, err = e.m.Update(e.ctx, testTopic, topics.Patch{TargetLagMs: &lag})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st, err := b.Get(e.ctx, testTopic)
		require.NoError(c, err)
		assert.Equal(c, lag, st.Config.TargetLagMs)
	}, waitTimeout, 10*time.Millisecond, "replica B sees the update made through A")

	require.NoError(t, e.m.Disable(e.ctx, testTopic, true))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := b.Get(e.ctx, testTopic)
		assert.ErrorIs(c, err, topics.ErrNoSuchTopic)
	}, waitTimeout, 10*time.Millisecond, "replica B forgets the topic released through A")
	require.NoError(t, externalB(), "released: the table is writable through B")
}
