package pipeline_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/pipeline"
	kafkasource "github.com/tarnhq/tarn/ingest/source"
)

// TestBudgetBoundsBufferedBytes: two pipelines (the topic into two
// tables) share a 48 KiB budget, with a target size and lag that would
// never flush on their own. Sampled throughout, the budget's reservations
// and the sum of both pipelines' BufferedBytes never exceed it; both
// pipelines make progress through many early flushes, and every row
// lands once in each table.
func TestBudgetBoundsBufferedBytes(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	e.produceFlights(fs[:6000], 0)
	other := catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights_copy"}
	cfg2 := e.config()
	cfg2.Table = other
	_, err := pipeline.EnsureTable(e.ctx, e.cat, e.wh, cfg2, userColumns(t, e.writer))
	require.NoError(t, err)

	const limit = 48 << 10
	budget := pipeline.NewBudget(limit)
	cfg1 := e.config()
	var ps []*pipeline.Pipeline
	for _, cfg := range []pipeline.Config{cfg1, cfg2} {
		cfg.TargetLag = time.Hour
		cfg.TargetFileSizeBytes = 1 << 30
		p, err := pipeline.New(cfg, pipeline.Deps{Tables: e.tio, Registry: e.rc, OpenSource: e.openSource, Budget: budget,
			Logger: discardLogger()})
		require.NoError(t, err)
		ps = append(ps, p)
	}

	var maxUsed, maxBuffered atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			used := budget.Used()
			buffered := ps[0].Status().BufferedBytes + ps[1].Status().BufferedBytes
			if used > maxUsed.Load() {
				maxUsed.Store(used)
			}
			if buffered > maxBuffered.Load() {
				maxBuffered.Store(buffered)
			}
			time.Sleep(100 * time.Microsecond)
		}
	})
	rs := []*running{e.start(ps[0]), e.start(ps[1])}
	require.Eventually(t, func() bool {
		for _, p := range ps {
			st := p.Status()
			if st.Rows+int64(st.BufferedRows) < 6000 {
				return false
			}
		}
		return true
	}, waitTimeout, 10*time.Millisecond)
	var commits []int64
	for i, p := range ps {
		commits = append(commits, p.Status().Commits)
		require.NoError(t, rs[i].stop(t))
	}
	close(stop)
	wg.Wait()

	t.Logf("commits %v, max reserved %d, max buffered %d", commits, maxUsed.Load(), maxBuffered.Load())
	assert.LessOrEqual(t, maxUsed.Load(), int64(limit))
	assert.LessOrEqual(t, maxBuffered.Load(), int64(limit))
	assert.Greater(t, maxBuffered.Load(), int64(limit/4), "the sampler saw the buffers fill")
	assert.Zero(t, budget.Used(), "everything released after the Runs")
	// Without the budget neither pipeline would commit before its Run
	// stops (an hour's lag, a 1 GiB target). 6,000 rows of ~80 bytes are
	// ~480 KB per table: at most 48 KiB buffered at a time takes ten
	// flushes.
	for i, p := range ps {
		st := p.Status()
		assert.GreaterOrEqual(t, commits[i], int64(5), "pipeline %d flushed early, often", i)
		assert.Positive(t, st.BudgetFlushes, "pipeline %d hit the limit itself", i)
		assert.Equal(t, int64(6000), st.Rows)
	}
	s := e.scan()
	assert.Equal(t, totals(fs[:6000]), s.totals())
	assert.Empty(t, s.duplicates())
}

// TestBudgetUnlimited: a nil budget never holds anything up, and a budget
// of 0 bytes or less is nil.
func TestBudgetUnlimited(t *testing.T) {
	assert.Nil(t, pipeline.NewBudget(0))
	var b *pipeline.Budget
	assert.Zero(t, b.Used())
	assert.Zero(t, b.Limit())
	assert.Equal(t, int64(512<<20), pipeline.DefaultMemoryBytes)
}

// gapSource is the test source with the optional Gaps and Lag of
// ingest/source's Source, faked.
type gapSource struct {
	pipeline.Source
	gaps []kafkasource.Gap
	mu   sync.Mutex
	// next is the last next map Lag was given.
	next map[int32]int64
}

func (s *gapSource) Gaps() []kafkasource.Gap { return s.gaps }

func (s *gapSource) Lag(_ context.Context, next map[int32]int64) (map[int32]kafkasource.PartitionLag, error) {
	s.mu.Lock()
	s.next = next
	s.mu.Unlock()
	return map[int32]kafkasource.PartitionLag{
		0: {Records: 5, Age: 3 * time.Second},
		1: {Records: 2, Age: time.Second},
		2: {},
	}, nil
}

// TestStatusGapsAndLag: a Source with the optional Gaps and Lag methods
// has its gaps in Status (kept over Runs), and its lag summed over
// partitions (records) and maxed (seconds), measured against the table's
// offsets.
func TestStatusGapsAndLag(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	e.produceFlights(fs[:30], 0)
	detected := time.Now().Add(-time.Minute)
	gap := kafkasource.Gap{Partition: 1, FirstMissing: 3, LastMissing: 9, Cause: kafkasource.GapRetention, Detected: detected}
	var src *gapSource
	open := func(ctx context.Context, start map[int32]int64) (pipeline.Source, error) {
		s, err := e.openSource(ctx, start)
		if err != nil {
			return nil, err
		}
		src = &gapSource{Source: s, gaps: []kafkasource.Gap{gap}}
		return src, nil
	}
	p, err := pipeline.New(e.config(), pipeline.Deps{Tables: e.tio, Registry: e.rc, OpenSource: open, Logger: discardLogger()})
	require.NoError(t, err)
	r := e.start(p)
	e.waitHead(r, e.endOffsets())
	require.Eventually(t, func() bool { return !p.Status().LagAt.IsZero() }, waitTimeout, 10*time.Millisecond)
	require.NoError(t, r.stop(t))

	st := p.Status()
	assert.Equal(t, []kafkasource.Gap{gap}, st.Gaps)
	assert.Equal(t, int64(7), st.LagRecords)
	assert.Equal(t, 3.0, st.LagSeconds)
	src.mu.Lock()
	assert.NotNil(t, src.next, "Lag was given the table's offsets")
	src.mu.Unlock()

	// A second Run keeps the first Run's gaps and adds its source's.
	r = e.start(p)
	require.Eventually(t, func() bool { return len(p.Status().Gaps) == 2 }, waitTimeout, 10*time.Millisecond)
	require.NoError(t, r.stop(t))
}

// TestStatusLagRealSource: with ingest/source's Source, the lag comes
// from the brokers: before anything is committed the table lags by every
// record produced.
func TestStatusLagRealSource(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	e.produceFlights(fs[:300], 0)
	open := func(ctx context.Context, start map[int32]int64) (pipeline.Source, error) {
		return kafkasource.Open(ctx, kafkasource.Config{Brokers: e.kafka.ListenAddrs(), Topic: testTopic}, start)
	}
	cfg := e.config()
	cfg.TargetLag = time.Hour
	cfg.TargetFileSizeBytes = 1 << 30
	p, err := pipeline.New(cfg, pipeline.Deps{Tables: e.tio, Registry: e.rc, OpenSource: open, Logger: discardLogger()})
	require.NoError(t, err)
	r := e.start(p)
	// The first measurement, at start, knows no record's age yet; the
	// next one (5 s later) has the oldest unread record's.
	require.Eventually(t, func() bool { return p.Status().LagSeconds > 0 }, waitTimeout, 10*time.Millisecond)
	st := p.Status()
	assert.Equal(t, int64(300), st.LagRecords, "nothing committed yet")
	assert.Less(t, st.LagSeconds, 30.0)
	assert.Empty(t, st.Gaps)
	require.NoError(t, r.stop(t))
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
