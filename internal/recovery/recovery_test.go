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

// Panics reads tarn_panics_recovered_total{component} from the default
// registry.
func Panics(t testing.TB, component string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
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
	before := Panics(t, recovery.Maintenance)
	err := recovery.Call(recovery.Maintenance, func() error {
		var m map[string]int
		m["x"] = 1 // assignment to entry in nil map
		return nil
	})
	var pe *recovery.PanicError
	require.ErrorAs(t, err, &pe)
	require.Contains(t, err.Error(), "assignment to entry in nil map")
	require.Contains(t, string(pe.Stack), "recovery_test.go", "the stack of the goroutine that panicked")
	require.Equal(t, before+1, Panics(t, recovery.Maintenance))

	want := errors.New("plain")
	require.Equal(t, want, recovery.Call(recovery.Maintenance, func() error { return want }))
	require.Equal(t, before+1, Panics(t, recovery.Maintenance), "only panics are counted")

	require.PanicsWithValue(t, http.ErrAbortHandler, func() {
		_ = recovery.Call(recovery.HTTP, func() error { panic(http.ErrAbortHandler) })
	}, "net/http's deliberate abort is passed on")
}

func TestRunLogsThePanic(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	before := Panics(t, recovery.Background)
	recovery.Run(log, "lag refresh", func() { panic("boom") })
	require.Equal(t, before+1, Panics(t, recovery.Background))
	out := buf.String()
	for _, want := range []string{`"msg":"recovered from a panic"`, `"in":"lag refresh"`, `"panic":"boom"`, `"stack":"goroutine `} {
		require.True(t, strings.Contains(out, want), "log %s lacks %s", out, want)
	}
}
