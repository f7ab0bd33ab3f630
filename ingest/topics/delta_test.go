package topics_test

import (
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
)

// TestDeltaOption: "delta": true on enable sets the table's
// tarn.delta.enabled (what the Delta publisher follows), PATCH
// "delta": false turns it off again and ingest goes on; a topic enabled
// without the option leaves the property unset.
func TestDeltaOption(t *testing.T) {
	e := newEnv(t)
	on := true
	st := e.enable(func(c *topics.TopicConfig) { c.Delta = &on })
	require.Equal(t, &on, st.Config.Delta)
	require.Equal(t, "true", e.loadTable().Properties()[catalog.PropDeltaEnabled])
	e.waitRows(int64(e.produce(30)))

	off := false
	st, err := e.m.Update(e.ctx, testTopic, topics.Patch{Delta: &off})
	require.NoError(t, err)
	require.Equal(t, &off, st.Config.Delta)
	require.Equal(t, "false", e.loadTable().Properties()[catalog.PropDeltaEnabled])
	e.waitRows(int64(e.produce(30)))
}

// TestDeltaOptionAbsent: enabling without "delta" sets no property.
func TestDeltaOptionAbsent(t *testing.T) {
	e := newEnv(t)
	e.enable(nil)
	_, ok := e.loadTable().Properties()[catalog.PropDeltaEnabled]
	require.False(t, ok)
}

// TestDeltaRefusedForUpsert: a new user enabled an upsert topic with
// "delta": true (and PATCHed delta on an upsert topic); both were
// accepted, and the Delta log stopped at its first version once an update
// committed a position delete, with only a WARN in the log. The
// combination is refused now, before anything is created.
func TestDeltaRefusedForUpsert(t *testing.T) {
	e := newEnv(t)
	on := true
	_, err := e.m.Enable(e.ctx, topics.TopicConfig{Topic: testTopic, Table: testTable, TargetLagMs: 1000, Mode: "upsert", Delta: &on})
	require.ErrorIs(t, err, topics.ErrInvalid)
	require.ErrorContains(t, err, "mode upsert")
	_, err = e.cat.TableIO(e.wh).LoadTable(e.ctx, table.Identifier{"air", "flights"})
	require.Error(t, err, "the refused enable created no table")
	_, err = e.m.Get(e.ctx, testTopic)
	require.ErrorIs(t, err, topics.ErrNoSuchTopic)
}
