package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testicebergrest"
	"github.com/tarnhq/tarn/publish"
)

// registerTrap is a proxy in front of an Iceberg REST target that, when
// armed, stops the next registerTable call at one of two points of a
// publish, so that the test can kill Tarn exactly there:
//   - before it reaches the target, after Tarn's drop of the old entry
//     went through (the target has no table at all);
//   - after the target accepted it, before Tarn hears back (the target
//     holds a pointer Tarn has not recorded).
type registerTrap struct {
	target string
	mu     sync.Mutex
	armed  string        // "", "before" or "after"
	hit    chan struct{} // closed when an armed call is held
	free   chan struct{} // closed to let the held call end
}

func (p *registerTrap) arm(at string) (hit chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.hit, p.free = at, make(chan struct{}), make(chan struct{})
	return p.hit
}

func (p *registerTrap) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free != nil {
		close(p.free)
		p.free = nil
	}
}

func (p *registerTrap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	at, hit, free := "", chan struct{}(nil), chan struct{}(nil)
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/register") {
		p.mu.Lock()
		at, hit, free = p.armed, p.hit, p.free
		p.armed = ""
		p.mu.Unlock()
	}
	hold := func() {
		close(hit)
		<-free
		http.Error(w, "held by the test", http.StatusBadGateway) // to a killed client
	}
	if at == "before" {
		hold()
		return
	}
	req, _ := http.NewRequestWithContext(context.Background(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer rsp.Body.Close()
	out, _ := io.ReadAll(rsp.Body)
	if at == "after" {
		hold()
		return
	}
	for k, v := range rsp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(rsp.StatusCode)
	_, _ = w.Write(out)
}

// TestE2EServeKilledMidPublishConverges: `tarn serve` publishing to Apache
// Iceberg's REST catalog is killed (SIGKILL) in the middle of moving the
// target's pointer, at both dangerous points in turn — after the drop of
// the old entry before the register (the target has no table), and after
// the target accepted the register before Tarn recorded it — with commits
// made before each kill. After each restart the target converges to
// Tarn's head with no conflict and no error: no publish is lost, and
// Tarn's own unrecorded write is not taken for a foreign change.
func TestE2EServeKilledMidPublishConverges(t *testing.T) {
	uri, _ := testicebergrest.Start(t)
	trap := &registerTrap{target: uri}
	proxy := httptest.NewServer(trap)
	t.Cleanup(proxy.Close)
	t.Cleanup(trap.release)
	dir := t.TempDir()
	targets := fmt.Sprintf(`[{"name":"ref","type":"iceberg-rest","uri":%q}]`, proxy.URL)
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--publish", targets}
	p := startTarn(t, cleanEnv(), args...)

	mustCall(t, http.MethodPost, p.URL+"/v1/namespaces", map[string]any{"namespace": []string{"pub"}}, 200)
	schema := map[string]any{"type": "struct", "schema-id": 0, "fields": []any{map[string]any{"id": 1, "name": "id", "type": "long", "required": true}}}
	mustCall(t, http.MethodPost, p.URL+"/v1/namespaces/pub/tables", map[string]any{"name": "t", "schema": schema,
		"properties": map[string]string{"tarn.publish.ref": "true"}}, 200)

	ctx := context.Background()
	fixture, err := rest.NewCatalog(ctx, "fixture", uri)
	require.NoError(t, err)
	targetLocation := func() string {
		tbl, err := fixture.LoadTable(ctx, table.Identifier{"pub", "t"})
		if errors.Is(err, icecatalog.ErrNoSuchTable) {
			return ""
		}
		if err != nil {
			t.Errorf("load pub.t from the fixture: %v", err)
			return ""
		}
		return tbl.MetadataLocation()
	}
	location := func() string {
		var lt struct {
			MetadataLocation string `json:"metadata-location"`
		}
		require.NoError(t, json.Unmarshal(mustCall(t, http.MethodGet, p.URL+"/v1/namespaces/pub/tables/t", nil, 200), &lt))
		return lt.MetadataLocation
	}
	n := 0
	commit := func() {
		n++
		mustCall(t, http.MethodPost, p.URL+"/v1/namespaces/pub/tables/t", map[string]any{"updates": []any{
			map[string]any{"action": "set-properties", "updates": map[string]string{"n": fmt.Sprint(n)}}}}, 200)
	}
	converged := func(when string) {
		t.Helper()
		require.Eventually(t, func() bool { return targetLocation() == location() }, 30*time.Second, 100*time.Millisecond,
			"%s: the target points at %q, Tarn's head is %s\n%s", when, targetLocation(), location(), p.Stderr())
		var st publish.Status
		var mu sync.Mutex // the condition runs on a goroutine of its own
		require.Eventually(t, func() bool {
			rsp, err := http.Get(p.URL + "/management/v1/publish")
			if err != nil {
				return false
			}
			defer rsp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			st = publish.Status{}
			return json.NewDecoder(rsp.Body).Decode(&st) == nil && len(st.Targets) == 1 && len(st.Targets[0].Tables) == 1 &&
				st.Targets[0].Tables[0].State == publish.StatePublished
		}, 30*time.Second, 100*time.Millisecond, "%s: never published\n%s", when, p.Stderr())
		mu.Lock()
		defer mu.Unlock()
		s := st.Targets[0].Tables[0]
		require.Equal(t, location(), s.MetadataLocation, when)
		require.Empty(t, s.Error, when)
		require.Empty(t, s.Conflict, when)
	}
	converged("first publish")

	for round, at := range []string{"before", "after", "before", "after"} {
		commit()
		commit()
		converged(fmt.Sprintf("round %d, before the kill", round))
		hit := trap.arm(at)
		commit() // its publish is held at the trap
		select {
		case <-hit:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: no register reached the trap\n%s", round, p.Stderr())
		}
		head := location()
		p.kill(t)
		trap.release()
		if at == "before" {
			require.Empty(t, targetLocation(), "round %d: the kill should leave the target without a table", round)
		} else {
			require.Equal(t, head, targetLocation(), "round %d: the target should hold the unrecorded write", round)
		}
		p = startTarn(t, cleanEnv(), args...)
		converged(fmt.Sprintf("round %d, after the restart", round))
	}
	commit()
	converged("a commit after the last restart")
}
