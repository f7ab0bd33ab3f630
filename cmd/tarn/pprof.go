package main

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
)

// pprofListenEnv names the environment variable that, when set to a
// host:port, makes any tarn command serve Go's net/http/pprof handlers
// (/debug/pprof/...) on that address, apart from the catalog's listener.
// Off by default: the profiles show internals and cost CPU while taken,
// so this is for benchmarks (bench/ingest) and debugging only; bind it to
// loopback. It is read in init so that it needs no flag wiring in every
// command; a listen error is logged and ignored (the server still runs).
const pprofListenEnv = "TARN_PPROF_LISTEN"

func init() {
	addr := os.Getenv(pprofListenEnv)
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() {
		if err := http.ListenAndServe(addr, mux); err != nil {
			slog.Warn("pprof listener", "addr", addr, "err", err)
		}
	}()
}
