package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tarnhq/tarn/internal/errclass"
)

// DefaultLeaseTTL is how long a replica's lease outlives its last
// renewal (tarn serve --lease-ttl): the longest a table's maintenance or
// publishing waits after its replica died (kill -9, a lost host) before
// another replica takes it over. Renewals run every third of it, so
// two of them may fail (a Postgres restart takes a few seconds) before
// a lease is lost.
const DefaultLeaseTTL = 30 * time.Second

// ErrLeaseLost is the cause of a held lease's context when the lease was
// lost: a renewal did not return it, or no renewal succeeded within the
// TTL (the store is unreachable), so another replica may hold it now.
var ErrLeaseLost = errclass.New(ErrConflict, "lease lost")

// LeaseKeeper holds one replica's leases over a Leases store: it takes
// a lease when asked (Do), renews every lease it holds in one call
// (Leases.RenewLeases) every TTL/3 while Run runs, and ends the context
// of the work under a lease as soon as the lease may have lapsed: when a
// renewal does not return it, or when the TTL has passed since the last
// successful renewal was *sent* (counted on this replica's monotonic
// clock from before the store's clock started the TTL, so the work stops
// no later than the store lets another replica take over, whatever the
// two clocks read). Safe for concurrent use.
type LeaseKeeper struct {
	leases Leases
	holder string
	ttl    time.Duration
	log    *slog.Logger

	mu   sync.Mutex
	held map[string]*heldLease
}

// heldLease is a lease this replica holds: its context ends (cause
// ErrLeaseLost) when timer fires at the local deadline or a renewal
// misses it.
type heldLease struct {
	lease  Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
}

// NewLeaseKeeper returns the keeper of holder's leases on leases, each
// taken for ttl (DefaultLeaseTTL when 0). holder must name this process
// uniquely among the replicas (tarn serve: the replica id and a random
// suffix per start, so a restarted replica never inherits a dead one's
// lease without a new epoch).
func NewLeaseKeeper(leases Leases, holder string, ttl time.Duration, log *slog.Logger) *LeaseKeeper {
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	if log == nil {
		log = slog.Default()
	}
	return &LeaseKeeper{leases: leases, holder: holder, ttl: ttl, log: log, held: map[string]*heldLease{}}
}

// Holder is the name this keeper holds leases under.
func (k *LeaseKeeper) Holder() string { return k.holder }

// TTL is the lease TTL.
func (k *LeaseKeeper) TTL() time.Duration { return k.ttl }

// Do runs fn under lease name: it takes the lease unless this keeper
// holds it already, and runs fn with a context that also ends (cause
// ErrLeaseLost) if the lease is lost meanwhile. With sticky the lease
// stays held after fn, renewed until Release, loss or the end of Run
// (a table's maintenance stays on its replica); without, it is released
// when fn returns (a publish). ran is false, with the holder's lease and
// a nil error, when another holder holds it. Errors: the store's; fn's.
func (k *LeaseKeeper) Do(ctx context.Context, name string, sticky bool, fn func(ctx context.Context, l Lease) error) (l Lease, ran bool, err error) {
	h, l, ok, err := k.hold(ctx, name)
	if err != nil || !ok {
		return l, false, err
	}
	wctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(h.ctx, func() { cancel(context.Cause(h.ctx)) })
	defer func() {
		stop()
		cancel(context.Canceled)
	}()
	err = fn(wctx, l)
	if !sticky {
		k.Release(context.WithoutCancel(ctx), name)
	}
	return l, true, err
}

// Holds reports whether this keeper holds lease name now.
func (k *LeaseKeeper) Holds(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	h := k.held[name]
	return h != nil && h.ctx.Err() == nil
}

// Held is the number of leases this keeper holds.
func (k *LeaseKeeper) Held() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, h := range k.held {
		if h.ctx.Err() == nil {
			n++
		}
	}
	return n
}

// hold returns name's held lease, taking it when this keeper does not
// hold it (or lost it).
func (k *LeaseKeeper) hold(ctx context.Context, name string) (*heldLease, Lease, bool, error) {
	k.mu.Lock()
	if h := k.held[name]; h != nil && h.ctx.Err() == nil {
		l := h.lease
		k.mu.Unlock()
		return h, l, true, nil
	}
	k.mu.Unlock()
	sent := time.Now()
	l, ok, err := k.leases.AcquireLease(ctx, name, k.holder, k.ttl)
	if err != nil {
		return nil, Lease{}, false, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	if !ok {
		return nil, l, false, nil
	}
	lctx, cancel := context.WithCancelCause(context.Background())
	h := &heldLease{lease: l, ctx: lctx, cancel: cancel}
	h.timer = time.AfterFunc(time.Until(sent.Add(k.ttl)), func() {
		cancel(fmt.Errorf("%w: %s not renewed within %s", ErrLeaseLost, name, k.ttl))
	})
	k.mu.Lock()
	if old := k.held[name]; old != nil {
		old.timer.Stop()
		old.cancel(ErrLeaseLost)
	}
	k.held[name] = h
	k.mu.Unlock()
	k.log.Debug("lease acquired", "lease", name, "holder", k.holder, "epoch", l.Epoch)
	return h, l, true, nil
}

// Release gives lease name up (if held), so another replica may take it
// at once; the work under it sees its context end.
func (k *LeaseKeeper) Release(ctx context.Context, name string) {
	k.mu.Lock()
	h := k.held[name]
	delete(k.held, name)
	k.mu.Unlock()
	if h == nil {
		return
	}
	h.timer.Stop()
	h.cancel(context.Canceled)
	if err := k.leases.ReleaseLease(ctx, name, k.holder, h.lease.Epoch); err != nil {
		k.log.Warn("release lease (it lapses after the TTL)", "lease", name, "err", err)
	}
}

// Run renews the held leases every TTL/3 until ctx ends, then releases
// them all (a graceful stop hands the work over at once; a kill leaves
// it to the TTL).
func (k *LeaseKeeper) Run(ctx context.Context) {
	t := time.NewTicker(k.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			k.releaseAll()
			return
		case <-t.C:
			k.renew(ctx)
		}
	}
}

// renew extends every held lease; a lease the store did not return is
// lost at once, and on an error every lease keeps the deadline of its
// last renewal.
func (k *LeaseKeeper) renew(ctx context.Context) {
	k.mu.Lock()
	n := len(k.held)
	k.mu.Unlock()
	if n == 0 {
		return
	}
	sent := time.Now()
	rctx, cancel := context.WithTimeout(ctx, k.ttl/3)
	ls, err := k.leases.RenewLeases(rctx, k.holder, k.ttl)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			k.log.Warn("renew leases", "holder", k.holder, "leases", n, "err", err)
		}
		return
	}
	got := make(map[string]Lease, len(ls))
	for _, l := range ls {
		got[l.Name] = l
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for name, h := range k.held {
		l, ok := got[name]
		if !ok || l.Epoch != h.lease.Epoch {
			h.timer.Stop()
			h.cancel(fmt.Errorf("%w: %s is no longer held by %s", ErrLeaseLost, name, k.holder))
			delete(k.held, name)
			k.log.Warn("lease lost", "lease", name, "holder", k.holder, "epoch", h.lease.Epoch)
			continue
		}
		if h.ctx.Err() != nil {
			delete(k.held, name)
			continue
		}
		h.lease = l
		h.timer.Reset(time.Until(sent.Add(k.ttl)))
	}
}

func (k *LeaseKeeper) releaseAll() {
	k.mu.Lock()
	names := make([]string, 0, len(k.held))
	for name := range k.held {
		names = append(names, name)
	}
	k.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, name := range names {
		k.Release(ctx, name)
	}
}

// IsLeaseLost reports whether err ended work because its lease was lost.
func IsLeaseLost(ctx context.Context, err error) bool {
	return errors.Is(err, ErrLeaseLost) || errors.Is(context.Cause(ctx), ErrLeaseLost)
}
