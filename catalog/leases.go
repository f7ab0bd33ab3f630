package catalog

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tarnhq/tarn/internal/errclass"
)

// Lease is one named lease as its store holds it: who holds it until
// when, and its epoch, a fencing token that grows by one with every
// acquisition by a holder that did not hold it unexpired (a renewal
// keeps it). A holder that sees its epoch still current knows that
// nobody else held the lease since it took it.
type Lease struct {
	Name   string
	Holder string
	Epoch  int64
	// Expires is when the lease lapses, by the store's clock (for
	// catalog/postgres the database's, never a replica's): reported, not
	// compared with the local clock (LeaseKeeper counts the TTL from the
	// moment it sent the request instead).
	Expires time.Time
}

// Leases grants named, expiring leases: a Store whose backend several
// replicas share (catalog/postgres) implements it, found by type
// assertion, so that a job (a table's maintenance, a table's publishing
// to a target) runs on one replica at a time and moves to another when
// its holder dies. A Store without it is one process's only; LocalLeases
// serves it. Each method is one atomic step (one SQL statement on
// PostgreSQL) and takes the time from the store's clock. storetest.RunLeases
// is the contract.
type Leases interface {
	// AcquireLease takes lease name for holder for ttl when nobody holds
	// it, its holder's ttl ran out, or holder holds it already (then it is
	// renewed, epoch unchanged). ok is false, with the current holder's
	// Lease, when another holder holds it unexpired.
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (l Lease, ok bool, err error)
	// RenewLeases extends by ttl every unexpired lease holder holds and
	// returns them (one round trip for all of a replica's leases); a
	// lease missing from the result was lost (it expired, and another
	// holder may have taken it).
	RenewLeases(ctx context.Context, holder string, ttl time.Duration) ([]Lease, error)
	// ReleaseLease ends holder's lease name of epoch at once, so that
	// another holder may take it without waiting for the TTL; a lease
	// held by another holder or epoch is left alone. The epoch is kept:
	// the next acquisition bumps it.
	ReleaseLease(ctx context.Context, name, holder string, epoch int64) error
	// ListLeases returns the leases whose name starts with prefix,
	// expired ones included, by name.
	ListLeases(ctx context.Context, prefix string) ([]Lease, error)
}

// ErrLeaseHeld: another replica holds the lease of the work asked for
// (409); the message names the holder.
var ErrLeaseHeld = errclass.New(ErrConflict, "lease held by another replica")

// LocalLeases is Leases in memory, for a store only one process uses
// (catalog/bolt: the bbolt file lock keeps a second Tarn out), where
// this process always holds what it asks for unless another holder of
// the same process does. The zero value is ready; time is time.Now.
type LocalLeases struct {
	mu sync.Mutex
	m  map[string]*Lease
	// Now is the clock; time.Now when nil (tests set it).
	Now func() time.Time
}

var _ Leases = (*LocalLeases)(nil)

func (l *LocalLeases) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// AcquireLease implements Leases.
func (l *LocalLeases) AcquireLease(_ context.Context, name, holder string, ttl time.Duration) (Lease, bool, error) {
	if err := CheckLease(name, holder, ttl); err != nil {
		return Lease{}, false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	cur := l.m[name]
	switch {
	case cur == nil:
		cur = &Lease{Name: name}
		if l.m == nil {
			l.m = map[string]*Lease{}
		}
		l.m[name] = cur
		cur.Epoch = 1
	case cur.Holder == holder && cur.Expires.After(now):
	case cur.Expires.After(now):
		return *cur, false, nil
	default:
		cur.Epoch++
	}
	cur.Holder, cur.Expires = holder, now.Add(ttl)
	return *cur, true, nil
}

// RenewLeases implements Leases.
func (l *LocalLeases) RenewLeases(_ context.Context, holder string, ttl time.Duration) ([]Lease, error) {
	if err := CheckLease("-", holder, ttl); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var out []Lease
	for _, cur := range l.m {
		if cur.Holder == holder && cur.Expires.After(now) {
			cur.Expires = now.Add(ttl)
			out = append(out, *cur)
		}
	}
	sortLeases(out)
	return out, nil
}

// ReleaseLease implements Leases.
func (l *LocalLeases) ReleaseLease(_ context.Context, name, holder string, epoch int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur := l.m[name]; cur != nil && cur.Holder == holder && cur.Epoch == epoch {
		if now := l.now(); cur.Expires.After(now) {
			cur.Expires = now
		}
	}
	return nil
}

// ListLeases implements Leases.
func (l *LocalLeases) ListLeases(_ context.Context, prefix string) ([]Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Lease
	for name, cur := range l.m {
		if strings.HasPrefix(name, prefix) {
			out = append(out, *cur)
		}
	}
	sortLeases(out)
	return out, nil
}

func sortLeases(ls []Lease) {
	slices.SortFunc(ls, func(a, b Lease) int { return strings.Compare(a.Name, b.Name) })
}

// CheckLease refuses an empty name or holder and a TTL under a
// millisecond (the stores' resolution) with ErrInvalidArgument; every
// Leases implementation calls it, so all refuse the same arguments.
func CheckLease(name, holder string, ttl time.Duration) error {
	if name == "" || holder == "" {
		return Errorf(ErrInvalidArgument, "lease name and holder must not be empty (got %q, %q)", name, holder)
	}
	if ttl < time.Millisecond {
		return Errorf(ErrInvalidArgument, "lease TTL %s must be at least 1ms", ttl)
	}
	return nil
}
