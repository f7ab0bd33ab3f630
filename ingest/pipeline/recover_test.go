package pipeline_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/internal/recovery"
)

// panicSource panics on its second Poll, once the first has put records
// in the pipeline's buffer, as a bug on the read path would.
type panicSource struct {
	pipeline.Source
	polls  int
	closed *atomic.Bool
}

func (s *panicSource) Poll(ctx context.Context) ([]*kgo.Record, error) {
	if s.polls++; s.polls == 2 {
		panic("injected: read path bug")
	}
	return s.Source.Poll(ctx)
}

func (s *panicSource) Close() {
	s.closed.Store(true)
	s.Source.Close()
}

// Regression: a panic in a topic's pipeline ended the whole process
// (every topic, the catalog server). It fails the run now, like any
// error: Run returns it, the status says failed with the panic as the
// reason, the source is closed, and the next Run (the supervisor's
// restart) reads the records the failed run had buffered again, each
// exactly once.
func TestPanicFailsTheRun(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	e.produceFlights(fs[:30], 0)
	var closed atomic.Bool
	armed := true
	open := func(ctx context.Context, start map[int32]int64) (pipeline.Source, error) {
		s, err := e.openSource(ctx, start)
		if err != nil || !armed {
			return s, err
		}
		return &panicSource{Source: s, closed: &closed}, nil
	}
	cfg := e.config()
	cfg.TargetLag = time.Hour // nothing is committed before the panic
	p, err := pipeline.New(cfg, pipeline.Deps{Tables: e.tio, Registry: e.rc, OpenSource: open, Logger: discardLogger()})
	require.NoError(t, err)

	err = p.Run(e.ctx)
	var pe *recovery.PanicError
	require.ErrorAs(t, err, &pe)
	require.Contains(t, err.Error(), "injected: read path bug")
	st := p.Status()
	require.Equal(t, pipeline.StateFailed, st.State)
	require.Contains(t, st.Reason, "panic: injected")
	require.True(t, closed.Load(), "the source is closed")
	require.Empty(t, e.scan().rows, "nothing was committed")

	armed = false
	cfg.TargetLag = time.Second
	p, err = pipeline.New(cfg, pipeline.Deps{Tables: e.tio, Registry: e.rc, OpenSource: open, Logger: discardLogger()})
	require.NoError(t, err)
	r := e.start(p)
	e.waitHead(r, e.endOffsets())
	require.NoError(t, r.stop(t))
	rows := e.scan().rows
	require.Len(t, rows, 30)
	seen := map[key]bool{}
	for _, row := range rows {
		require.False(t, seen[row.key], "record %v twice", row.key)
		seen[row.key] = true
	}
}
