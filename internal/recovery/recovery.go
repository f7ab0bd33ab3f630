// Package recovery turns a panic in a request handler or a background
// goroutine (a maintenance job, a topic's pipeline, a periodic refresh)
// into an error that is logged with its stack and counted, so that one
// bug or unforeseen input fails one request or one run instead of the
// connection or the whole process (Go ends the process on a panic no
// deferred recover stops; net/http drops the connection of a handler
// that panics).
package recovery

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Components label tarn_panics_recovered_total.
const (
	HTTP        = "http"
	Maintenance = "maintenance"
	Pipeline    = "pipeline"
	Background  = "background"
)

var panicsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "tarn_panics_recovered_total",
	Help: "Panics recovered and turned into errors, by component (http, maintenance, pipeline, background).",
}, []string{"component"})

func init() {
	for _, c := range []string{HTTP, Maintenance, Pipeline, Background} {
		panicsTotal.WithLabelValues(c)
	}
}

// PanicError is a recovered panic: its value and the stack of the
// goroutine that panicked. Logged through slog it carries both.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// LogValue logs the panic's value and stack.
func (e *PanicError) LogValue() slog.Value {
	return slog.GroupValue(slog.String("panic", fmt.Sprint(e.Value)), slog.String("stack", string(e.Stack)))
}

// Recover, deferred directly (defer recovery.Recover(component, &err)),
// stops a panic of the calling goroutine, counts it under component and
// sets *err to a *PanicError. http.ErrAbortHandler, the panic net/http
// asks handlers to use to abort a response, is passed on.
func Recover(component string, err *error) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	panicsTotal.WithLabelValues(component).Inc()
	*err = &PanicError{Value: v, Stack: debug.Stack()}
}

// Call runs fn and returns its error, or the *PanicError of its panic
// (Recover).
func Call(component string, fn func() error) (err error) {
	defer Recover(component, &err)
	return fn()
}

// Go runs fn in a new goroutine whose panic is logged on log (with
// what) and counted instead of ending the process: for background
// loops whose own errors are logged where they occur.
func Go(log *slog.Logger, what string, fn func()) {
	go Run(log, what, fn)
}

// Run runs fn, logging and counting a panic (Go, without the goroutine).
func Run(log *slog.Logger, what string, fn func()) {
	if err := Call(Background, func() error { fn(); return nil }); err != nil {
		log.Error("recovered from a panic", "in", what, "err", err)
	}
}
