package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/maintenance"
)

// TestPassesOfTwoReplicasMaintainATableOnce: two schedulers over one
// catalog and one lease store (two replicas) pass over the same table:
// the first to pass takes its lease and keeps it, so the table is
// maintained by that one only, pass after pass; a run on request on the
// other names the holder (ErrLeaseHeld). When the holder stops (its
// leases released), the other's next pass takes the table over.
func TestPassesOfTwoReplicasMaintainATableOnce(t *testing.T) {
	h := newHarness(t, nil)
	h.ingest(10, 10)
	leases := &catalog.LocalLeases{}
	owned := func(id catalog.Ident) bool { return id.Equal(tableIdent) }
	kA := catalog.NewLeaseKeeper(leases, "replica-a", time.Minute, nil)
	kB := catalog.NewLeaseKeeper(leases, "replica-b", time.Minute, nil)
	a, err := maintenance.New(maintenance.Config{}, maintenance.Deps{Catalog: h.cat, Owned: owned, Leases: kA, Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	b, err := maintenance.New(maintenance.Config{}, maintenance.Deps{Catalog: h.cat, Owned: owned, Leases: kB, Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)

	runs := func(s *maintenance.Scheduler) int64 {
		for _, ts := range s.Status().Tables {
			if ts.Table == "air.flights" {
				return ts.Jobs[maintenance.JobCompact].Runs
			}
		}
		return 0
	}
	for range 3 {
		require.NoError(t, a.Pass(h.ctx))
		require.NoError(t, b.Pass(h.ctx))
	}
	assert.Equal(t, int64(3), runs(a), "the holder maintains the table every pass")
	assert.Equal(t, int64(0), runs(b), "the other replica never does")
	_, err = b.RunJobs(h.ctx, tableIdent, []string{maintenance.JobCompact})
	require.ErrorIs(t, err, catalog.ErrLeaseHeld)
	assert.Contains(t, err.Error(), "replica-a")

	// A stops: its Run releases its leases; B's next pass takes over.
	ctx, stop := context.WithCancel(h.ctx)
	done := make(chan struct{})
	go func() { defer close(done); kA.Run(ctx) }()
	stop()
	<-done
	require.NoError(t, b.Pass(h.ctx))
	assert.Equal(t, int64(1), runs(b))
	ls, err := leases.ListLeases(h.ctx, "maintenance/")
	require.NoError(t, err)
	require.Len(t, ls, 1)
	assert.Equal(t, "replica-b", ls[0].Holder)
	assert.Equal(t, int64(2), ls[0].Epoch)
}
