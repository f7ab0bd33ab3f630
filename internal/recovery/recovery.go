// Package recovery turns a panic in a request handler or a background
// goroutine (a maintenance job, a topic's pipeline, a periodic refresh)
// into an error that is logged with its stack and counted, so that one
// bug or unforeseen input fails one request or one run instead of the
// connection or the whole process (Go ends the process on a panic no
// deferred recover stops; net/http drops the connection of a handler
// that panics).
package recovery

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Components label tarn_panics_recovered_total.
const (
	HTTP        = "http"
	Maintenance = "maintenance"
	Pipeline    = "pipeline"
	Background  = "background"
)

// Panics counts recovered panics in tarn_panics_recovered_total, by
// component, on the registerer it was made for; its methods recover.
// A nil *Panics recovers and counts nothing (a test or tool that wires no
// metrics).
type Panics struct{ total *prometheus.CounterVec }

// NewPanics returns the counter of reg; none is registered when reg is
// nil. Every package handed the same registerer shares one counter: a
// registerer that has it already (prometheus.AlreadyRegisteredError)
// returns that one, so the server, maintenance and the topic manager of
// one process add to the same series. The error is any other
// registration failure.
func NewPanics(reg prometheus.Registerer) (*Panics, error) {
	total := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tarn_panics_recovered_total",
		Help: "Panics recovered and turned into errors, by component (http, maintenance, pipeline, background).",
	}, []string{"component"})
	if reg != nil {
		if err := reg.Register(total); err != nil {
			are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err)
			if !ok {
				return nil, fmt.Errorf("recovery: register metrics: %w", err)
			}
			if total, ok = are.ExistingCollector.(*prometheus.CounterVec); !ok {
				return nil, fmt.Errorf("recovery: register metrics: %w", err)
			}
		}
	}
	// Every component's series from the start (0), so a rate or an
	// alert has a series before the first panic.
	for _, c := range []string{HTTP, Maintenance, Pipeline, Background} {
		total.WithLabelValues(c)
	}
	return &Panics{total: total}, nil
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

// Recover, deferred directly (defer p.Recover(component, &err)), stops a
// panic of the calling goroutine, counts it under component and sets
// *err to a *PanicError. http.ErrAbortHandler, the panic net/http asks
// handlers to use to abort a response, is passed on.
func (p *Panics) Recover(component string, err *error) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	if p != nil {
		p.total.WithLabelValues(component).Inc()
	}
	*err = &PanicError{Value: v, Stack: debug.Stack()}
}

// Call runs fn and returns its error, or the *PanicError of its panic
// (Recover).
func (p *Panics) Call(component string, fn func() error) (err error) {
	defer p.Recover(component, &err)
	return fn()
}

// Go runs fn in a new goroutine whose panic is logged on log (with
// what) and counted instead of ending the process: for background
// loops whose own errors are logged where they occur.
func (p *Panics) Go(log *slog.Logger, what string, fn func()) {
	go p.Run(log, what, fn)
}

// Run runs fn, logging and counting a panic (Go, without the goroutine).
func (p *Panics) Run(log *slog.Logger, what string, fn func()) {
	if err := p.Call(Background, func() error { fn(); return nil }); err != nil {
		log.Error("recovered from a panic", "in", what, "err", err)
	}
}
