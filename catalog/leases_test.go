package catalog_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/storetest"
)

func TestLocalLeases(t *testing.T) {
	storetest.RunLeases(t, func(*testing.T) catalog.Leases { return &catalog.LocalLeases{} })
}

// cutOff is a Leases whose calls fail while cut is set: a replica
// partitioned from the store.
type cutOff struct {
	catalog.Leases
	cut atomic.Bool
}

var errCut = errors.New("store unreachable")

func (c *cutOff) RenewLeases(ctx context.Context, holder string, ttl time.Duration) ([]catalog.Lease, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	return c.Leases.RenewLeases(ctx, holder, ttl)
}

func (c *cutOff) ReleaseLease(ctx context.Context, name, holder string, epoch int64) error {
	if c.cut.Load() {
		return errCut
	}
	return c.Leases.ReleaseLease(ctx, name, holder, epoch)
}

// TestLeaseKeeperHandsOver: two keepers (two replicas) over one store.
// A sticky lease stays with A while A renews; when A can no longer
// renew (cut off from the store, or dead) the work under it sees its
// context end with ErrLeaseLost within the TTL, and B takes the lease
// with a new epoch.
func TestLeaseKeeperHandsOver(t *testing.T) {
	ls := &catalog.LocalLeases{}
	const ttl = 300 * time.Millisecond
	aStore := &cutOff{Leases: ls}
	a := catalog.NewLeaseKeeper(aStore, "a", ttl, nil)
	b := catalog.NewLeaseKeeper(ls, "b", ttl, nil)
	actx, stopA := context.WithCancel(context.Background())
	runA := make(chan struct{})
	go func() { defer close(runA); a.Run(actx) }()
	bctx, stopB := context.WithCancel(context.Background())
	defer stopB()
	go b.Run(bctx)

	var workCtx context.Context
	l, ran, err := a.Do(context.Background(), "maintenance/t", true, func(ctx context.Context, l catalog.Lease) error {
		workCtx = ctx
		return nil
	})
	require.NoError(t, err)
	require.True(t, ran)
	assert.Equal(t, int64(1), l.Epoch)
	assert.Error(t, workCtx.Err(), "the work's context ends with Do")

	// Renewed by A's Run: B is refused for longer than the TTL.
	time.Sleep(2 * ttl)
	held, ran, err := b.Do(context.Background(), "maintenance/t", true, func(context.Context, catalog.Lease) error {
		t.Fatal("B ran work A holds")
		return nil
	})
	require.NoError(t, err)
	assert.False(t, ran)
	assert.Equal(t, "a", held.Holder)
	assert.True(t, a.Holds("maintenance/t"))

	// Work running on A when A is cut off from the store: its context
	// ends with ErrLeaseLost within the TTL.
	lost := make(chan error, 1)
	go func() {
		_, _, _ = a.Do(context.Background(), "maintenance/t", true, func(ctx context.Context, _ catalog.Lease) error {
			<-ctx.Done()
			lost <- context.Cause(ctx)
			return nil
		})
	}()
	time.Sleep(50 * time.Millisecond)
	aStore.cut.Store(true)
	start := time.Now()
	select {
	case cause := <-lost:
		assert.ErrorIs(t, cause, catalog.ErrLeaseLost)
		assert.Less(t, time.Since(start), ttl, "the work stops within the TTL of the last renewal")
	case <-time.After(5 * ttl):
		t.Fatal("the work under a lease that is not renewed went on past the TTL")
	}
	require.Eventually(t, func() bool {
		l, ran, err := b.Do(context.Background(), "maintenance/t", true, func(context.Context, catalog.Lease) error { return nil })
		return err == nil && ran && l.Holder == "b" && l.Epoch == 2
	}, 5*ttl, 20*time.Millisecond)
	stopA()
	<-runA
}
