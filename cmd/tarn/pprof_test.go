package main

import (
	"io"
	"net/http"
	"testing"
)

// TestPprofListenerStops: the pprof listener was started from init(), in
// every process that linked package main (tests included) and was never
// stopped. Now main starts it and stops it: the handlers answer while it
// runs and the address refuses connections once stop returns.
func TestPprofListenerStops(t *testing.T) {
	if addr, stop := startPprof(""); addr != "" {
		stop()
		t.Fatalf("empty address started a listener on %s", addr)
	}
	addr, stop := startPprof("127.0.0.1:0")
	if addr == "" {
		t.Fatal("no listener")
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) == 0 {
		stop()
		t.Fatalf("cmdline: %s %q", resp.Status, body)
	}
	stop()
	if resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline"); err == nil {
		resp.Body.Close()
		t.Fatalf("pprof still answers on %s after stop: %s", addr, resp.Status)
	}
}
