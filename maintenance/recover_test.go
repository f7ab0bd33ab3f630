package maintenance_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/recovery"
	"github.com/tarnhq/tarn/maintenance"
)

// panicOnCommit panics in CommitPointers once armed, as a bug on a job's
// commit path would.
type panicOnCommit struct {
	catalog.Store
	armed *atomic.Bool
}

func (s panicOnCommit) CommitPointers(ctx context.Context, changes []catalog.PointerChange) error {
	if s.armed.Load() {
		panic("injected: commit path bug")
	}
	return s.Store.CommitPointers(ctx, changes)
}

// Regression: a panic in a maintenance job ended the process (a pass runs
// each table on its own goroutine, and nothing recovered there). It is
// that job's failure now: returned, recorded in the status, counted in
// tarn_maintenance_job_failures_total and tarn_panics_recovered_total,
// and the scheduler carries on (the next job runs once disarmed).
func TestJobPanicIsAFailure(t *testing.T) {
	var armed atomic.Bool
	h := newHarnessOn(t, nil, func(s catalog.Store) catalog.Store { return panicOnCommit{Store: s, armed: &armed} })
	h.ingest(12, 4)
	require.Equal(t, 0.0, counter(t, h.reg, "tarn_panics_recovered_total", "component", recovery.Maintenance), "the harness's own registry")
	failuresBefore := counter(t, h.reg, "tarn_maintenance_job_failures_total", "job", maintenance.JobCompact)

	armed.Store(true)
	rs, err := h.sched.RunJobs(h.ctx, tableIdent, []string{maintenance.JobCompact})
	var pe *recovery.PanicError
	require.ErrorAs(t, err, &pe)
	require.Contains(t, err.Error(), "injected: commit path bug")
	require.Len(t, rs, 1)
	require.Equal(t, maintenance.JobCompact, rs[0].Job)
	require.Equal(t, 1.0, counter(t, h.reg, "tarn_panics_recovered_total", "component", recovery.Maintenance))
	require.Equal(t, failuresBefore+1, counter(t, h.reg, "tarn_maintenance_job_failures_total", "job", maintenance.JobCompact))
	st := h.sched.Status()
	require.Len(t, st.Tables, 1)
	js := st.Tables[0].Jobs[maintenance.JobCompact]
	require.EqualValues(t, 1, js.Failures)
	require.Contains(t, js.LastError, "panic: injected")

	armed.Store(false)
	r := h.run(maintenance.JobCompact)
	require.Less(t, r.FilesAfter, r.FilesBefore, "the same job runs again: %+v", r)
	h.check(h.load(), nil, 48)
}
