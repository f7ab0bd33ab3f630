package pipeline

import "sync"

// DefaultMemoryBytes is the default process-wide budget for buffered
// records (cmd/tarn's --ingest-memory-bytes): 512 MiB. A busy pipeline
// flushes at its TargetFileSizeBytes (128 MiB by default) anyway, so the
// default lets four of them fill whole files before the budget forces
// smaller ones, and keeps a many-topic process well inside a 1 GiB
// container (the Arrow builders and Parquet writer take about as much
// again while a batch is written).
const DefaultMemoryBytes int64 = 512 << 20

// Budget bounds the bytes of records buffered by all the pipelines that
// share it (Deps.Budget), estimated as for Config.TargetFileSizeBytes:
// value, key and headers as read from Kafka plus a fixed per-row overhead.
// A nil *Budget is unlimited. Safe for concurrent use.
//
// Policy: a pipeline reserves a record's bytes before buffering it. When
// the reservation would take the total past the limit, that pipeline
// commits its own buffer first (an early flush, smaller files) and tries
// again. If the others hold the rest, it waits for them, and signals
// pressure: every pipeline that holds buffered records and sees the
// pressure (between polls, or woken from a poll) commits them. So the
// total never exceeds the limit, except for a single record larger than
// the whole budget, which is admitted when nothing else is buffered; and
// except while a pipeline's Run is ending, when a waiting record is
// admitted at once so that the shutdown commit is not held up.
type Budget struct {
	limit int64

	mu   sync.Mutex
	used int64
	// waiters counts reservations waiting; pressure is closed while there
	// are any (and replaced by an open one when the last is served).
	waiters  int
	pressure chan struct{}
	// freed is closed and replaced on every release.
	freed chan struct{}
}

// NewBudget returns a budget of bytes; nil (unlimited) when bytes <= 0.
func NewBudget(bytes int64) *Budget {
	if bytes <= 0 {
		return nil
	}
	return &Budget{limit: bytes, pressure: make(chan struct{}), freed: make(chan struct{})}
}

// Limit returns the budget in bytes (0 for a nil, unlimited budget).
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// Used returns the bytes reserved now, by all pipelines.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// tryReserve reserves n bytes if they fit, or if nothing is reserved.
func (b *Budget) tryReserve(n int64) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tryReserveLocked(n)
}

func (b *Budget) tryReserveLocked(n int64) bool {
	if b.used+n <= b.limit || b.used == 0 {
		b.used += n
		return true
	}
	return false
}

// reserve reserves n bytes, waiting (under pressure) until they fit. When
// stop is closed it reserves them at once, over the limit if need be.
func (b *Budget) reserve(n int64, stop <-chan struct{}) {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.tryReserveLocked(n) {
		b.mu.Unlock()
		return
	}
	b.waiters++
	if b.waiters == 1 {
		close(b.pressure)
	}
	for {
		freed := b.freed
		b.mu.Unlock()
		stopped := false
		select {
		case <-freed:
		case <-stop:
			stopped = true
		}
		b.mu.Lock()
		if stopped {
			b.used += n
		}
		if stopped || b.tryReserveLocked(n) {
			break
		}
	}
	b.waiters--
	if b.waiters == 0 {
		b.pressure = make(chan struct{})
	}
	b.mu.Unlock()
}

// release returns n reserved bytes.
func (b *Budget) release(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
}

// pressured returns a channel that is closed while a reservation waits:
// pipelines holding buffered records should commit them. nil (never
// ready) for an unlimited budget.
func (b *Budget) pressured() <-chan struct{} {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pressure
}

// underPressure reports whether a reservation waits.
func (b *Budget) underPressure() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters > 0
}
