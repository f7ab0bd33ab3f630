package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
)

// RunLeases is the contract of catalog.Leases: catalog.LocalLeases and
// catalog/postgres run it. Leases lapse in real time (the store's clock),
// so it waits a few hundred milliseconds.
func RunLeases(t *testing.T, newLeases func(t *testing.T) catalog.Leases) {
	ctx := context.Background()
	const ttl = 400 * time.Millisecond
	t.Run("AcquireRenewExpire", func(t *testing.T) {
		ls := newLeases(t)
		a, ok, err := ls.AcquireLease(ctx, "maintenance/t1", "a", ttl)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, "a", a.Holder)
		assert.Equal(t, int64(1), a.Epoch)

		// Another holder is refused and told who holds it.
		b, ok, err := ls.AcquireLease(ctx, "maintenance/t1", "b", ttl)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, "a", b.Holder)
		assert.Equal(t, int64(1), b.Epoch)

		// The holder acquiring again renews: same epoch.
		a2, ok, err := ls.AcquireLease(ctx, "maintenance/t1", "a", ttl)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, int64(1), a2.Epoch)
		assert.False(t, a2.Expires.Before(a.Expires))

		renewed, err := ls.RenewLeases(ctx, "a", ttl)
		require.NoError(t, err)
		require.Len(t, renewed, 1)
		assert.Equal(t, "maintenance/t1", renewed[0].Name)

		// Not renewed for longer than the TTL: b takes it, with a new epoch,
		// and a's renewal no longer returns it.
		time.Sleep(ttl + 100*time.Millisecond)
		b, ok, err = ls.AcquireLease(ctx, "maintenance/t1", "b", ttl)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, "b", b.Holder)
		assert.Equal(t, int64(2), b.Epoch)
		renewed, err = ls.RenewLeases(ctx, "a", ttl)
		require.NoError(t, err)
		assert.Empty(t, renewed)
	})
	t.Run("ReleaseKeepsEpoch", func(t *testing.T) {
		ls := newLeases(t)
		a, ok, err := ls.AcquireLease(ctx, "publish/glue/t", "a", time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
		// A release by another holder or of another epoch changes nothing.
		require.NoError(t, ls.ReleaseLease(ctx, "publish/glue/t", "b", a.Epoch))
		require.NoError(t, ls.ReleaseLease(ctx, "publish/glue/t", "a", a.Epoch+1))
		_, ok, err = ls.AcquireLease(ctx, "publish/glue/t", "b", time.Hour)
		require.NoError(t, err)
		assert.False(t, ok)
		// Released: another holder takes it at once, with the next epoch.
		require.NoError(t, ls.ReleaseLease(ctx, "publish/glue/t", "a", a.Epoch))
		b, ok, err := ls.AcquireLease(ctx, "publish/glue/t", "b", time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, a.Epoch+1, b.Epoch)
		// Releasing a missing lease is no error.
		require.NoError(t, ls.ReleaseLease(ctx, "missing", "a", 1))
	})
	t.Run("RenewOnlyOwnAndList", func(t *testing.T) {
		ls := newLeases(t)
		for _, n := range []string{"maintenance/x", "maintenance/y", "publish/z"} {
			_, ok, err := ls.AcquireLease(ctx, n, "a", time.Hour)
			require.NoError(t, err)
			require.True(t, ok)
		}
		_, ok, err := ls.AcquireLease(ctx, "maintenance/w", "b", time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
		renewed, err := ls.RenewLeases(ctx, "a", time.Hour)
		require.NoError(t, err)
		var names []string
		for _, l := range renewed {
			names = append(names, l.Name)
		}
		assert.ElementsMatch(t, []string{"maintenance/x", "maintenance/y", "publish/z"}, names)
		listed, err := ls.ListLeases(ctx, "maintenance/")
		require.NoError(t, err)
		names = nil
		for _, l := range listed {
			names = append(names, l.Name+"="+l.Holder)
		}
		assert.Equal(t, []string{"maintenance/w=b", "maintenance/x=a", "maintenance/y=a"}, names)
	})
	t.Run("InvalidArguments", func(t *testing.T) {
		ls := newLeases(t)
		for _, c := range []struct {
			name, holder string
			ttl          time.Duration
		}{{"", "a", time.Second}, {"n", "", time.Second}, {"n", "a", 0}} {
			_, _, err := ls.AcquireLease(ctx, c.name, c.holder, c.ttl)
			assert.ErrorIs(t, err, catalog.ErrInvalidArgument, "%+v", c)
		}
	})
	t.Run("OneWinnerOfARace", func(t *testing.T) {
		ls := newLeases(t)
		const n = 8
		wins := make(chan string, n)
		start := make(chan struct{})
		for i := range n {
			go func() {
				<-start
				h := string(rune('a' + i))
				_, ok, err := ls.AcquireLease(ctx, "race", h, time.Hour)
				if err == nil && ok {
					wins <- h
				} else {
					wins <- ""
				}
			}()
		}
		close(start)
		var won []string
		for range n {
			if h := <-wins; h != "" {
				won = append(won, h)
			}
		}
		assert.Len(t, won, 1, "exactly one of %d racing holders takes the lease", n)
	})
}
