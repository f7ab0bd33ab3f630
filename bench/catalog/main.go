// Command catalog measures REST catalog latency and throughput (issue 8
// item 3) for Tarn (`tarn serve`, -tarn) and Apache Iceberg's Java REST
// fixture (RESTCatalogServer: JdbcCatalog behind Jetty,
// scripts/iceberg-rest-fixture.sh; on a SQLite file, as its in-memory
// default fails under concurrency) on the same machine, one after
// the other, with the same plain-HTTP client.
//
// For each server and each concurrency in -concurrency (default 1, 8,
// 32), workers loop for -duration on:
//
//   - load: GET .../namespaces/bench/tables/load (a table with one
//     snapshot);
//   - create: POST .../namespaces/bench/tables, a new flights table each;
//   - commit-hot: an append of one data file to one table shared by every
//     worker;
//   - commit-spread: the same on one of 100 tables picked at random.
//
// A commit is what a client's append of one data file sends: GET the
// table, then POST updates [add-snapshot (operation append, one added
// data file, parent = current snapshot, next sequence number),
// set-snapshot-ref main] with requirement assert-ref-snapshot-id main =
// the current snapshot. A 409 (another writer won) is counted as a
// conflict and retried from the GET. The latency is the POST's; the
// throughput counts successful commits. The manifest list named by the
// snapshot is not written: neither catalog reads it on commit.
//
// Lost updates: afterwards every committed-to table is loaded and the
// snapshots on main's parent chain are counted; each successful commit
// must be one of them (lost = successful commits - chain length, must be
// 0).
//
// Output: a table per server, "target ..." lines and JSON in -out.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tarnhq/tarn/bench/internal/harness"
)

// Published targets (issue 8): loadTable p99 at concurrency 1, and
// Tarn's loadTable throughput at concurrency 32 over the fixture's.
// Issue 20 item 3: commits to one hot table, sequentially (commit-hot at
// concurrency 1), at 8 committers, and over the fixture's at 8 and 32.
const (
	goalLoadP99Ms        = 2.0
	goalLoadRatio        = 5.0
	goalCommitSequential = 400.0
	goalCommitHotC8      = 300.0
	goalCommitHotRatio   = 2.0
	spreadTables         = 100
)

// flightsSchema is the flights columns as an Iceberg schema.
var flightsSchema = json.RawMessage(`{"type":"struct","schema-id":0,"fields":[
{"id":1,"name":"date","required":false,"type":"timestamp"},
{"id":2,"name":"delay","required":false,"type":"long"},
{"id":3,"name":"distance","required":false,"type":"long"},
{"id":4,"name":"origin","required":false,"type":"string"},
{"id":5,"name":"destination","required":false,"type":"string"}]}`)

type op struct {
	Op          string  `json:"op"`
	Concurrency int     `json:"concurrency"`
	Count       int     `json:"count"`
	Errors      int     `json:"errors"`
	Conflicts   int     `json:"conflicts,omitempty"`
	PerS        float64 `json:"per_s"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	FirstError  string  `json:"first_error,omitempty"`
}

type serverResult struct {
	Server       string `json:"server"`
	Version      string `json:"version"`
	Ops          []op   `json:"ops"`
	Commits      int64  `json:"commits"`
	LostUpdates  int64  `json:"lost_updates"`
	CheckedTabls int    `json:"checked_tables"`
}

type result struct {
	Benchmark   string          `json:"benchmark"`
	Date        string          `json:"date"`
	Cores       int             `json:"cores"`
	DurationS   float64         `json:"duration_per_op_s"`
	Servers     []*serverResult `json:"servers"`
	LoadRatio32 float64         `json:"tarn_vs_fixture_load_per_s_c32"`
	Met         map[string]bool `json:"met"`
}

// warmUp is -warm-up.
var warmUp time.Duration

func main() {
	tarnBin := flag.String("tarn", "bin/tarn", "the tarn binary")
	duration := flag.Duration("duration", 3*time.Second, "how long each (op, concurrency) runs")
	flag.DurationVar(&warmUp, "warm-up", 2*time.Second, "unmeasured run of each op at the top concurrency before it is measured")
	conc := flag.String("concurrency", "1,8,32", "concurrency levels")
	fixture := flag.Bool("fixture", true, "also measure Apache Iceberg's Java REST fixture")
	out := flag.String("out", "bench/results/catalog.json", "where to write the JSON result")
	flag.Parse()
	var levels []int
	for s := range strings.SplitSeq(*conc, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			log.Fatalf("-concurrency: %v", err)
		}
		levels = append(levels, c)
	}
	if err := run(*tarnBin, *duration, levels, *fixture, *out); err != nil {
		log.Fatal(err)
	}
}

func run(tarnBin string, d time.Duration, levels []int, fixture bool, out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "tarn-bench-catalog-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	r := result{Benchmark: "catalog", Date: time.Now().UTC().Format(time.RFC3339), Cores: runtime.NumCPU(),
		DurationS: d.Seconds(), Met: map[string]bool{}}

	addr, err := harness.FreeAddr()
	if err != nil {
		return err
	}
	tarn := exec.CommandContext(ctx, tarnBin, "serve", "--listen", addr, "--data-dir", filepath.Join(tmp, "tarn"),
		"--log-level", "warn")
	tarn.Stderr = os.Stderr
	if err := tarn.Start(); err != nil {
		return err
	}
	defer func() { _ = tarn.Process.Kill(); _ = tarn.Wait() }()
	if err := harness.WaitHTTP(ctx, "http://"+addr+"/healthz", 30*time.Second); err != nil {
		return err
	}
	v, _ := exec.Command(tarnBin, "version").Output()
	sr, err := measure(ctx, "tarn", strings.TrimSpace(string(v)), "http://"+addr, d, levels)
	if err != nil {
		return fmt.Errorf("tarn: %w", err)
	}
	r.Servers = append(r.Servers, sr)
	_ = tarn.Process.Kill()

	if fixture {
		faddr, err := harness.FreeAddr()
		if err != nil {
			return err
		}
		port := faddr[strings.LastIndexByte(faddr, ':')+1:]
		// The fixture's default JDBC URI is an in-memory SQLite database,
		// which is per connection: a second pooled connection (any
		// concurrency) sees no iceberg_tables and every request on it
		// fails. A file database is shared by all connections.
		// RESTCatalogServer reads CATALOG_URI as the catalog's uri.
		os.Setenv("CATALOG_URI", "jdbc:sqlite:file:"+filepath.Join(tmp, "fixture.db"))
		if _, err := harness.Script("scripts/iceberg-rest-fixture.sh", "start", port, filepath.Join(tmp, "fixture")); err != nil {
			return err
		}
		defer harness.Script("scripts/iceberg-rest-fixture.sh", "stop", port) //nolint:errcheck // best effort
		sr, err := measure(ctx, "iceberg-rest-fixture", "Apache Iceberg 1.11.0 RESTCatalogServer", "http://127.0.0.1:"+port, d, levels)
		if err != nil {
			return fmt.Errorf("fixture: %w", err)
		}
		r.Servers = append(r.Servers, sr)
	}
	report(&r, levels)
	return harness.WriteJSON(out, r)
}

func report(r *result, levels []int) {
	fmt.Printf("catalog: %d cores, %.0f s per op and concurrency, plain HTTP client in the same machine\n", r.Cores, r.DurationS)
	for _, s := range r.Servers {
		fmt.Printf("  %s (%s): %d commits, %d lost updates over %d tables\n", s.Server, s.Version, s.Commits, s.LostUpdates, s.CheckedTabls)
		fmt.Printf("    %-14s %5s %8s %10s %9s %9s %9s %7s\n", "op", "conc", "count", "per s", "p50 ms", "p99 ms", "conflicts", "errors")
		for _, o := range s.Ops {
			fmt.Printf("    %-14s %5d %8d %10.0f %9.2f %9.2f %9d %7d\n", o.Op, o.Concurrency, o.Count, o.PerS, o.P50Ms, o.P99Ms,
				o.Conflicts, o.Errors)
		}
	}
	find := func(s *serverResult, name string, c int) *op {
		for i := range s.Ops {
			if s.Ops[i].Op == name && s.Ops[i].Concurrency == c {
				return &s.Ops[i]
			}
		}
		return nil
	}
	t := r.Servers[0]
	if o := find(t, "load", 1); o != nil {
		r.Met["catalog-load-p99-c1"] = harness.Target("catalog-load-p99-c1", fmt.Sprintf("%.2f ms", o.P99Ms),
			fmt.Sprintf("≤ %.0f ms", goalLoadP99Ms), o.P99Ms <= goalLoadP99Ms && o.Errors == 0)
	}
	top := slices.Max(levels)
	if len(r.Servers) > 1 {
		a, b := find(t, "load", top), find(r.Servers[1], "load", top)
		if a != nil && b != nil && b.PerS > 0 {
			r.LoadRatio32 = a.PerS / b.PerS
			name := fmt.Sprintf("catalog-load-vs-fixture-c%d", top)
			r.Met[name] = harness.Target(name, fmt.Sprintf("%.1f×", r.LoadRatio32), fmt.Sprintf("≥ %.0f×", goalLoadRatio),
				r.LoadRatio32 >= goalLoadRatio)
		}
	}
	if o := find(t, "commit-hot", 1); o != nil {
		r.Met["commit-sequential"] = harness.Target("commit-sequential", fmt.Sprintf("%.0f/s (p50 %.2f ms)", o.PerS, o.P50Ms),
			fmt.Sprintf("≥ %.0f/s", goalCommitSequential), o.PerS >= goalCommitSequential && o.Errors == 0)
	}
	if o := find(t, "commit-hot", 8); o != nil {
		r.Met["commit-hot-c8"] = harness.Target("commit-hot-c8", fmt.Sprintf("%.0f/s, %d lost", o.PerS, t.LostUpdates),
			fmt.Sprintf("≥ %.0f/s, 0 lost", goalCommitHotC8), o.PerS >= goalCommitHotC8 && o.Errors == 0 && t.LostUpdates == 0)
	}
	if len(r.Servers) > 1 {
		// The ratio at each of 8 and 32 committers; the target holds
		// only when both do.
		var parts []string
		met, seen := true, 0
		for _, c := range []int{8, 32} {
			a, b := find(t, "commit-hot", c), find(r.Servers[1], "commit-hot", c)
			if a == nil || b == nil || b.PerS <= 0 {
				continue
			}
			seen++
			ratio := a.PerS / b.PerS
			parts = append(parts, fmt.Sprintf("c%d %.1f×", c, ratio))
			met = met && ratio >= goalCommitHotRatio && a.Errors == 0
		}
		if seen > 0 {
			r.Met["commit-hot-vs-fixture"] = harness.Target("commit-hot-vs-fixture", strings.Join(parts, ", "),
				fmt.Sprintf("≥ %.0f× at 8 and 32", goalCommitHotRatio), met && seen == 2)
		}
	}
	r.Met["catalog-lost-updates"] = harness.Target("catalog-lost-updates", fmt.Sprintf("tarn %d, fixture %d", t.LostUpdates,
		func() int64 {
			if len(r.Servers) > 1 {
				return r.Servers[1].LostUpdates
			}
			return 0
		}()), "0", t.LostUpdates == 0)
}

// client speaks the REST catalog's routes under one prefix.
type client struct {
	base string // http://host:port/v1/{prefix}
	hc   *http.Client
}

func newClient(ctx context.Context, root string) (*client, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 0}, Timeout: 60 * time.Second}
	c := &client{base: root + "/v1", hc: hc}
	var cfg struct {
		Overrides map[string]string `json:"overrides"`
		Defaults  map[string]string `json:"defaults"`
	}
	if _, err := c.do(ctx, http.MethodGet, root+"/v1/config", nil, &cfg); err != nil {
		return nil, err
	}
	if p := cfg.Overrides["prefix"]; p != "" {
		c.base += "/" + url.PathEscape(p)
	} else if p := cfg.Defaults["prefix"]; p != "" {
		c.base += "/" + url.PathEscape(p)
	}
	return c, nil
}

// do sends a request and decodes a 2xx JSON answer into out; it returns
// the status code, and an error for anything but 2xx.
func (c *client) do(ctx context.Context, method, u string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, msg)
	}
	if out != nil && len(b) > 0 {
		return resp.StatusCode, json.Unmarshal(b, out)
	}
	return resp.StatusCode, nil
}

func (c *client) createTable(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodPost, c.base+"/namespaces/bench/tables", map[string]any{
		"name": name, "schema": flightsSchema, "properties": map[string]string{"format-version": "2"}}, nil)
	return err
}

// tableMeta is the part of LoadTableResult a commit needs.
type tableMeta struct {
	Metadata struct {
		Location           string `json:"location"`
		LastSequenceNumber int64  `json:"last-sequence-number"`
		CurrentSnapshotID  *int64 `json:"current-snapshot-id"`
		CurrentSchemaID    int    `json:"current-schema-id"`
		Snapshots          []struct {
			SnapshotID int64  `json:"snapshot-id"`
			ParentID   *int64 `json:"parent-snapshot-id"`
		} `json:"snapshots"`
		Refs map[string]struct {
			SnapshotID int64 `json:"snapshot-id"`
		} `json:"refs"`
	} `json:"metadata"`
}

func (c *client) load(ctx context.Context, name string, into *tableMeta) error {
	_, err := c.do(ctx, http.MethodGet, c.base+"/namespaces/bench/tables/"+name, nil, into)
	return err
}

// commit appends one data file to table name; it returns the POST's
// latency and whether it lost a race (409).
func (c *client) commit(ctx context.Context, name string) (time.Duration, bool, error) {
	var m tableMeta
	if err := c.load(ctx, name, &m); err != nil {
		return 0, false, err
	}
	id := rand.Int64()
	snap := map[string]any{
		"snapshot-id":     id,
		"sequence-number": m.Metadata.LastSequenceNumber + 1,
		"timestamp-ms":    time.Now().UnixMilli(),
		"manifest-list":   fmt.Sprintf("%s/metadata/snap-%d-1-bench.avro", m.Metadata.Location, id),
		"summary": map[string]string{"operation": "append", "added-data-files": "1", "added-records": "1000",
			"added-files-size": "20000"},
		"schema-id": m.Metadata.CurrentSchemaID,
	}
	req := map[string]any{}
	var cur any // null: main must not exist yet
	if ref, ok := m.Metadata.Refs["main"]; ok {
		snap["parent-snapshot-id"] = ref.SnapshotID
		cur = ref.SnapshotID
	}
	req["requirements"] = []any{map[string]any{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": cur}}
	req["updates"] = []any{
		map[string]any{"action": "add-snapshot", "snapshot": snap},
		map[string]any{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": id},
	}
	t0 := time.Now()
	code, err := c.do(ctx, http.MethodPost, c.base+"/namespaces/bench/tables/"+name, req, nil)
	lat := time.Since(t0)
	if code == http.StatusConflict {
		return lat, true, nil
	}
	return lat, false, err
}

// measure runs every op at every concurrency against one server.
func measure(ctx context.Context, name, version, root string, d time.Duration, levels []int) (*serverResult, error) {
	c, err := newClient(ctx, root)
	if err != nil {
		return nil, err
	}
	if _, err := c.do(ctx, http.MethodPost, c.base+"/namespaces", map[string]any{"namespace": []string{"bench"}}, nil); err != nil {
		return nil, err
	}
	// Set-up: the load table with one snapshot, the hot table, the spread tables.
	for _, t := range []string{"load", "hot"} {
		if err := c.createTable(ctx, t); err != nil {
			return nil, err
		}
	}
	if _, _, err := c.commit(ctx, "load"); err != nil {
		return nil, err
	}
	for i := range spreadTables {
		if err := c.createTable(ctx, fmt.Sprintf("spread_%d", i)); err != nil {
			return nil, err
		}
	}
	sr := &serverResult{Server: name, Version: version}
	var commits sync.Map // table name → *atomic.Int64 of successful commits
	count := func(t string) {
		v, _ := commits.LoadOrStore(t, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	var created atomic.Int64
	for _, spec := range []struct {
		op string
		fn func(ctx context.Context, w int) (time.Duration, bool, error)
	}{
		{"load", func(ctx context.Context, _ int) (time.Duration, bool, error) {
			var m tableMeta
			t0 := time.Now()
			err := c.load(ctx, "load", &m)
			return time.Since(t0), false, err
		}},
		{"create", func(ctx context.Context, _ int) (time.Duration, bool, error) {
			t0 := time.Now()
			err := c.createTable(ctx, fmt.Sprintf("created_%d", created.Add(1)))
			return time.Since(t0), false, err
		}},
		{"commit-hot", func(ctx context.Context, _ int) (time.Duration, bool, error) {
			lat, conflict, err := c.commit(ctx, "hot")
			if err == nil && !conflict {
				count("hot")
			}
			return lat, conflict, err
		}},
		{"commit-spread", func(ctx context.Context, _ int) (time.Duration, bool, error) {
			t := fmt.Sprintf("spread_%d", rand.IntN(spreadTables))
			lat, conflict, err := c.commit(ctx, t)
			if err == nil && !conflict {
				count(t)
			}
			return lat, conflict, err
		}},
	} {
		// Warm-up, not measured: the same op at the top concurrency for
		// WarmUp, so that neither server is timed while it JIT-compiles
		// (the Java fixture) or grows its pools (both).
		if warmUp > 0 {
			loop(ctx, spec.op, slices.Max(levels), warmUp, spec.fn)
		}
		for _, conc := range levels {
			o := loop(ctx, spec.op, conc, d, spec.fn)
			log.Printf("%s %s c=%d: %d ok, %.0f/s, p50 %.2f ms, p99 %.2f ms, %d conflicts, %d errors %s", name, o.Op, conc,
				o.Count, o.PerS, o.P50Ms, o.P99Ms, o.Conflicts, o.Errors, o.FirstError)
			sr.Ops = append(sr.Ops, o)
		}
	}
	// Lost updates: every successful commit must be on main's chain.
	var ferr error
	commits.Range(func(k, v any) bool {
		t, n := k.(string), v.(*atomic.Int64).Load()
		if t == "load" {
			return true
		}
		var m tableMeta
		if err := c.load(ctx, t, &m); err != nil {
			ferr = err
			return false
		}
		parent := map[int64]*int64{}
		for _, s := range m.Metadata.Snapshots {
			parent[s.SnapshotID] = s.ParentID
		}
		chain := int64(0)
		if ref, ok := m.Metadata.Refs["main"]; ok {
			for id := &ref.SnapshotID; id != nil; id = parent[*id] {
				if _, ok := parent[*id]; !ok {
					break
				}
				chain++
			}
		}
		sr.Commits += n
		sr.CheckedTabls++
		if n > chain {
			sr.LostUpdates += n - chain
		}
		return true
	})
	return sr, ferr
}

// loop runs fn from conc workers for d and summarises the successful
// calls' latencies; a conflict is counted apart and not as a success.
func loop(ctx context.Context, name string, conc int, d time.Duration, fn func(context.Context, int) (time.Duration, bool, error)) op {
	var mu sync.Mutex
	var lat []float64
	var errs, conflicts int
	var first string
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	t0 := time.Now()
	for w := range conc {
		wg.Go(func() {
			var mine []float64
			var e, cf int
			var fe string
			for time.Now().Before(end) {
				l, conflict, err := fn(ctx, w)
				switch {
				case err != nil:
					e++
					if fe == "" {
						fe = err.Error()
					}
				case conflict:
					cf++
				default:
					mine = append(mine, float64(l)/float64(time.Millisecond))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += e
			conflicts += cf
			if first == "" {
				first = fe
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	el := time.Since(t0).Seconds()
	slices.Sort(lat)
	return op{Op: name, Concurrency: conc, Count: len(lat), Errors: errs, Conflicts: conflicts, PerS: float64(len(lat)) / el,
		P50Ms: harness.Pct(lat, 0.5), P99Ms: harness.Pct(lat, 0.99), FirstError: first}
}
