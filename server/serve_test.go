package server_test

import (
	"context"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/server"
)

// TestServeJoinsBackgroundWork: Serve started the expiry of idempotency
// records in a goroutine it never joined, so when serving failed (here,
// its listener closed) Serve returned with that goroutine still running,
// for as long as the caller's context lived. Serve now returns only after
// it has stopped.
func TestServeJoinsBackgroundWork(t *testing.T) {
	t.Parallel()
	cat, _, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	s := server.New(cat, server.Config{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), l) }() // never cancelled
	l.Close()
	if err := <-done; err == nil {
		t.Fatal("Serve on a closed listener returned nil")
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if strings.Contains(stacks, "expireIdempotencyKeys") {
		t.Fatalf("the idempotency expiry outlived Serve:\n%s", stacks)
	}
}
