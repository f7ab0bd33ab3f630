package produce

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// flushTimeout bounds the wait for the records in flight when Run ends.
const flushTimeout = 10 * time.Second

// tick is how often a rate-limited Run sends what is due.
const tick = 10 * time.Millisecond

// Pace is how fast and how much Run produces.
type Pace struct {
	// Rate is records per second; 0 is as fast as the client takes them
	// (kgo.MaxBufferedRecords bounds what is in flight).
	Rate int
	// Limit stops after this many records; 0 is no limit.
	Limit int64
}

// Run produces next(0), next(1), ... with cl at p's pace, until Limit
// records, until next returns a nil record (the input is done) or an
// error, or until ctx ends; then it waits (up to 10 s) for the records in
// flight. acked (may be nil) counts the records the broker acknowledged,
// as they are. It returns next's error or the first produce error; a
// cancelled ctx is not an error.
func Run(ctx context.Context, cl *kgo.Client, p Pace, next func(n int64) (*kgo.Record, error), acked *atomic.Int64) error {
	var (
		mu    sync.Mutex
		first error
	)
	firstErr := func() error {
		mu.Lock()
		defer mu.Unlock()
		return first
	}
	done := func(_ *kgo.Record, err error) {
		if err == nil {
			if acked != nil {
				acked.Add(1)
			}
			return
		}
		if errors.Is(err, context.Canceled) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
		}
	}
	err := func() error {
		start := time.Now()
		var t *time.Ticker
		if p.Rate > 0 {
			t = time.NewTicker(tick)
			defer t.Stop()
		}
		var sent int64
		for p.Limit == 0 || sent < p.Limit {
			due := sent + 1
			if t != nil {
				select {
				case <-ctx.Done():
					return nil
				case <-t.C:
				}
				due = int64(time.Since(start).Seconds() * float64(p.Rate))
			}
			if p.Limit > 0 {
				due = min(due, p.Limit)
			}
			for ; sent < due; sent++ {
				if ctx.Err() != nil {
					return nil
				}
				rec, err := next(sent)
				if err != nil {
					return err
				}
				if rec == nil {
					return nil
				}
				cl.Produce(ctx, rec, done)
			}
			if err := firstErr(); err != nil {
				return err
			}
		}
		return nil
	}()
	fctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if ferr := cl.Flush(fctx); ferr != nil && err == nil {
		err = fmt.Errorf("flush producer: %w", ferr)
	}
	if err != nil {
		return err
	}
	return firstErr()
}
