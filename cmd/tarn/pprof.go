package main

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
)

// pprofListenEnv names the environment variable that, when set to a
// host:port, makes any tarn command serve Go's net/http/pprof handlers
// (/debug/pprof/...) on that address, apart from the catalog's listener.
// Off by default: the profiles show internals and cost CPU while taken,
// so this is for benchmarks (bench/ingest) and debugging only; bind it to
// loopback. main reads it, so that it needs no flag wiring in every
// command; a listen error is logged and ignored (the command still runs).
const pprofListenEnv = "TARN_PPROF_LISTEN"

// startPprof serves the pprof handlers on addr until stop is called; stop
// closes the listener and waits for the serving goroutine. An empty addr
// starts nothing. bound is the address listened on ("" when none).
func startPprof(addr string) (bound string, stop func()) {
	if addr == "" {
		return "", func() {}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		slog.Warn("pprof listener", "addr", addr, "err", err)
		return "", func() {}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			slog.Warn("pprof listener", "addr", addr, "err", err)
		}
	})
	return l.Addr().String(), func() {
		_ = srv.Close()
		wg.Wait()
	}
}
