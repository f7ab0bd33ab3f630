package publish_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/publish"
)

// TestTwoReplicasPublishATableWithoutConflict: two publishers (two
// replicas) over one catalog, one store and one Glue follow the same
// commits. Without leases each publishes from its own copy of the
// record, and the second one's write, conditional on a VersionId the
// first one moved, is a conflict that stops the table; under the
// table's lease for the target each publish is one replica's at a time
// and starts from the stored record, so Glue follows every commit and
// no replica reports a conflict.
func TestTwoReplicasPublishATableWithoutConflict(t *testing.T) {
	h := newHarness(t, glueTarget("athena"))
	leases := &catalog.LocalLeases{}
	var pubs []*publish.Publisher
	for _, name := range []string{"replica-a", "replica-b"} {
		k := catalog.NewLeaseKeeper(leases, name, time.Minute, nil)
		pub, err := publish.New([]publish.Targeted{{Config: h.cfg, Target: publish.NewGlueWith(h.glue, h.cfg)}},
			publish.Deps{Tables: delta.CatalogTables(h.cat), Store: h.store, Metrics: prometheus.NewRegistry(),
				Owned: func(catalog.Ident) bool { return true }, Leases: k})
		require.NoError(t, err)
		h.cat.AddCommitObserver(pub)
		ctx, cancel := context.WithCancel(h.ctx)
		done := make(chan error, 1)
		go func() { done <- pub.Run(ctx) }()
		t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
		pubs = append(pubs, pub)
	}
	h.pub = pubs[0]
	h.create(orders, nil)
	var loc string
	for range 20 {
		loc = h.commit(orders)
	}
	h.waitGlue(ordersGlue, loc)
	for i, p := range pubs {
		for _, ts := range p.Status().Targets {
			for _, st := range ts.Tables {
				require.Empty(t, st.Conflict, "replica %d stopped the table: %+v", i, st)
			}
		}
	}
}
