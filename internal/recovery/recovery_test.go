package recovery_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/recovery"
)

// newPanics is a counter on a registry of the test's own.
func newPanics(t testing.TB) (*recovery.Panics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	p, err := recovery.NewPanics(reg)
	require.NoError(t, err)
	return p, reg
}

// Panics reads tarn_panics_recovered_total{component} from g; it fails
// the test when the series is absent.
func Panics(t testing.TB, g prometheus.Gatherer, component string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "tarn_panics_recovered_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelIs(m, "component", component) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("tarn_panics_recovered_total{component=%q} not gathered", component)
	return 0
}

func labelIs(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

func TestCallTurnsAPanicIntoAnError(t *testing.T) {
	t.Parallel()
	p, reg := newPanics(t)
	require.Equal(t, 0.0, Panics(t, reg, recovery.Maintenance), "every component's series exists from the start")
	err := p.Call(recovery.Maintenance, func() error {
		var m map[string]int
		m["x"] = 1 // assignment to entry in nil map
		return nil
	})
	var pe *recovery.PanicError
	require.ErrorAs(t, err, &pe)
	require.Contains(t, err.Error(), "assignment to entry in nil map")
	require.Contains(t, string(pe.Stack), "recovery_test.go", "the stack of the goroutine that panicked")
	require.Equal(t, 1.0, Panics(t, reg, recovery.Maintenance))

	want := errors.New("plain")
	require.Equal(t, want, p.Call(recovery.Maintenance, func() error { return want }))
	require.Equal(t, 1.0, Panics(t, reg, recovery.Maintenance), "only panics are counted")

	require.PanicsWithValue(t, http.ErrAbortHandler, func() {
		_ = p.Call(recovery.HTTP, func() error { panic(http.ErrAbortHandler) })
	}, "net/http's deliberate abort is passed on")
}

func TestRunLogsThePanic(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	p, reg := newPanics(t)
	p.Run(log, "lag refresh", func() { panic("boom") })
	require.Equal(t, 1.0, Panics(t, reg, recovery.Background))
	out := buf.String()
	for _, want := range []string{`"msg":"recovered from a panic"`, `"in":"lag refresh"`, `"panic":"boom"`, `"stack":"goroutine `} {
		require.True(t, strings.Contains(out, want), "log %s lacks %s", out, want)
	}
}

// The packages of one process are each handed the process's registerer
// and make their own Panics from it: they must share one counter, not
// fail on the second registration.
func TestNewPanicsSharesARegistrysCounter(t *testing.T) {
	t.Parallel()
	a, reg := newPanics(t)
	b, err := recovery.NewPanics(reg)
	require.NoError(t, err)
	_ = a.Call(recovery.Pipeline, func() error { panic("a") })
	_ = b.Call(recovery.Pipeline, func() error { panic("b") })
	require.Equal(t, 2.0, Panics(t, reg, recovery.Pipeline))
}

// A nil *Panics (no metrics wired) still recovers.
func TestNilPanicsRecovers(t *testing.T) {
	t.Parallel()
	var p *recovery.Panics
	var pe *recovery.PanicError
	require.ErrorAs(t, p.Call(recovery.HTTP, func() error { panic("x") }), &pe)
}
