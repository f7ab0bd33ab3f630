// Command metadata measures whether a streaming table's metadata stays
// flat (issue 20 item 5, target metadata-flat-1h): an hour of commits at
// a 1 s target lag on one table of `tarn serve`, with maintenance running
// as it does by default, and at the end the size of the current
// metadata.json, the snapshot and tag counts, the files in metadata/ and
// the loadTable p99.
//
// Method: the hour is simulated -speedup times faster. Every time rule
// is divided by the same factor, so the run sees the same sequence of
// events as a real hour: one commit every 1 s / speedup (an iceberg-go
// REST append of -rows rows, 1,700 by default as the issue's flights
// run, with a summary property the size of a 3-partition
// tarn.kafka.offsets), a maintenance pass every 60 s / speedup (`tarn
// serve --maintenance-interval`; every job: compact, tag, expire,
// manifests, orphans), and the table's properties those of a topic's
// table with the owned-table maintenance defaults scaled:
// history.expire.max-snapshot-age-ms 1 h, tarn.maintenance.tags.interval-ms
// 10 min and tarn.maintenance.tags.max-age-ms 1 day, each / speedup;
// tarn.maintenance.expire.max-snapshots 200 is a count and stays.
// Snapshot timestamps are the real clock's (iceberg-go sets them), which
// is why the rules are scaled rather than the clock faked. The table is
// not a topic's (no Kafka), so it sets tarn.maintenance.enabled=true.
// A commit that falls behind its slot is not made up: the run reports the
// commits made.
//
// loadTable is GET /v1/namespaces/bench/tables/flat, read to the end, by
// one client every 50 ms throughout; the p99 reported is over the last
// tenth of the run, beside the first tenth's.
//
// Output: a table on stdout, the target line
//
//	target metadata-flat-1h: 190 KB, loadTable p99 2.10 ms, 3600 commits (goal <= 512 KB, <= 5ms, >= 90% of 3600 commits) met
//
// and the figures as JSON in -out.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/bench/internal/harness"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/offsets"
	"github.com/tarnhq/tarn/tabledefaults"
)

// Goals of issue 20 item 5.
const (
	goalBytes    = 512 << 10
	goalLoadP99  = 5 * time.Millisecond
	simLag       = time.Second // the target lag simulated
	simPassEvery = time.Minute // maintenance.DefaultInterval
)

type result struct {
	Benchmark        string  `json:"benchmark"`
	Date             string  `json:"date"`
	Cores            int     `json:"cores"`
	Speedup          float64 `json:"speedup"`
	SimulatedS       float64 `json:"simulated_s"`
	WallS            float64 `json:"wall_s"`
	Commits          int     `json:"commits"`
	Retries          int     `json:"retried_appends"`
	RowsPerCommit    int     `json:"rows_per_commit"`
	MetadataBytes    int64   `json:"metadata_json_bytes"`
	MaxMetadataBytes int64   `json:"max_metadata_json_bytes_last_half"`
	Snapshots        int     `json:"snapshots"`
	Tags             int     `json:"tags"`
	MetadataFiles    int     `json:"files_in_metadata_dir"`
	Unreferenced     int     `json:"unreferenced_files_in_metadata_dir"`
	BytesPerSnapshot int64   `json:"bytes_per_snapshot"`
	LoadP50FirstMs   float64 `json:"load_p50_first_tenth_ms"`
	LoadP99FirstMs   float64 `json:"load_p99_first_tenth_ms"`
	LoadP50Ms        float64 `json:"load_p50_last_tenth_ms"`
	LoadP99Ms        float64 `json:"load_p99_last_tenth_ms"`
	Loads            int     `json:"loads_last_tenth"`
	Met              bool    `json:"met"`
	Samples          []point `json:"samples"`
}

// point is the table's state at one simulated minute.
type point struct {
	SimMin    int   `json:"sim_min"`
	Bytes     int64 `json:"metadata_json_bytes"`
	Snapshots int   `json:"snapshots"`
	Tags      int   `json:"tags"`
	Files     int   `json:"files_in_metadata_dir"`
}

func main() {
	tarnBin := flag.String("tarn", "bin/tarn", "the tarn binary")
	sim := flag.Duration("simulate", time.Hour, "simulated run length")
	speedup := flag.Float64("speedup", 10, "how many times faster than real time the run goes")
	rows := flag.Int("rows", 1700, "rows per commit (the issue's ~1,700 rows/s at a 1 s target lag)")
	out := flag.String("out", "bench/results/metadata.json", "where to write the JSON result")
	flag.Parse()
	// iceberg-go's client also applies write.metadata.delete-after-commit
	// after each append and logs every file the catalog deleted first.
	log.SetOutput(dropLines{w: os.Stderr, substr: "Failed to delete old metadata file"})
	if err := run(*tarnBin, *sim, *speedup, *rows, *out); err != nil {
		log.Fatal(err)
	}
}

func run(tarnBin string, sim time.Duration, speedup float64, rows int, out string) error {
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / speedup) }
	wall := scale(sim)
	ctx, cancel := context.WithTimeout(context.Background(), wall+5*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "tarn-bench-metadata-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	passEvery := max(scale(simPassEvery), time.Second) // --maintenance-interval's floor
	base, tarn, err := harness.Serve(ctx, tarnBin, filepath.Join(tmp, "tarn"), nil, "--maintenance-interval", passEvery.String())
	if err != nil {
		return err
	}
	defer func() { _ = tarn.Process.Kill(); _ = tarn.Wait() }()
	cat, err := rest.NewCatalog(ctx, "tarn", base)
	if err != nil {
		return err
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil); err != nil {
		return err
	}
	props := tabledefaults.Properties()
	ms := func(d time.Duration) string { return strconv.FormatInt(max(scale(d).Milliseconds(), 1), 10) }
	props[table.MaxSnapshotAgeMsKey] = ms(tabledefaults.MaxSnapshotAge)
	props[maintenance.EnabledProperty] = "true"
	props[maintenance.MaxSnapshotsProperty] = strconv.Itoa(maintenance.DefaultMaxSnapshots)
	props[maintenance.TagIntervalProperty] = ms(maintenance.DefaultTagInterval)
	props[maintenance.TagMaxAgeProperty] = ms(maintenance.DefaultTagMaxAge)
	ident := table.Identifier{"bench", "flat"}
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "partition", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: 2, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 3, Name: "origin", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 4, Name: "distance", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(ctx, ident, schema, icecatalog.WithProperties(props))
	if err != nil {
		return err
	}

	ld := &loader{url: base + "/v1/namespaces/bench/tables/flat"}
	loadCtx, stopLoading := context.WithCancel(ctx)
	defer stopLoading()
	var wg sync.WaitGroup
	wg.Go(func() { ld.run(loadCtx, 50*time.Millisecond) })

	r := result{Benchmark: "metadata", Date: time.Now().UTC().Format(time.RFC3339), Cores: runtime.NumCPU(), Speedup: speedup,
		SimulatedS: sim.Seconds(), RowsPerCommit: rows}
	began := time.Now()
	slot := scale(simLag)
	var next int64
	nextSample := 0
	for i := 0; time.Since(began) < wall; i++ {
		if d := time.Until(began.Add(time.Duration(i) * slot)); d > 0 {
			time.Sleep(d)
		} else if -d > slot {
			// Behind: skip the slots missed instead of bursting.
			i = int(time.Since(began) / slot)
		}
		rec := batch(next, rows)
		next += int64(rows)
		// The summary carries what an ingest snapshot's does: the
		// cumulative offsets of the flights topic's 3 partitions (under
		// another key: tarn.* summaries are the pipeline's own).
		o := offsets.Offsets{Cluster: "bench-cluster-id-0123456789", Topic: "flights", TopicID: "AAAAAAAAAAAAAAAAAAAAAA",
			Next: map[int32]int64{0: next / 3, 1: next / 3, 2: next - 2*(next/3)}}
		var retries int
		tbl, retries, err = appendRetrying(ctx, cat, ident, tbl, rec, iceberg.Properties{"bench.kafka.offsets": o.String()})
		r.Retries += retries
		rec.Release()
		if err != nil {
			return err
		}
		r.Commits++
		if m := int(time.Since(began) * time.Duration(speedup) / time.Minute); m >= nextSample {
			p, err := sample(tbl, m)
			if err != nil {
				return err
			}
			r.Samples = append(r.Samples, p)
			nextSample = m + 1
		}
	}
	r.WallS = time.Since(began).Seconds()
	stopLoading()
	wg.Wait()
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		return err
	}
	last, err := sample(tbl, int(sim/time.Minute))
	if err != nil {
		return err
	}
	r.Samples = append(r.Samples, last)
	r.MetadataBytes, r.Snapshots, r.Tags, r.MetadataFiles = last.Bytes, last.Snapshots, last.Tags, last.Files
	if r.Unreferenced, err = unreferenced(ctx, tbl); err != nil {
		return err
	}
	for _, p := range r.Samples[len(r.Samples)/2:] {
		r.MaxMetadataBytes = max(r.MaxMetadataBytes, p.Bytes)
	}
	if r.Snapshots > 0 {
		r.BytesPerSnapshot = r.MetadataBytes / int64(r.Snapshots)
	}
	first, lastTenth := ld.window(began, began.Add(wall/10)), ld.window(began.Add(wall*9/10), began.Add(wall+time.Minute))
	r.LoadP50FirstMs, r.LoadP99FirstMs = harness.Pct(first, 0.5), harness.Pct(first, 0.99)
	r.LoadP50Ms, r.LoadP99Ms, r.Loads = harness.Pct(lastTenth, 0.5), harness.Pct(lastTenth, 0.99), len(lastTenth)

	fmt.Printf("metadata of one table: %v simulated at %gx (%.0f s), a commit of %d rows every %v simulated, maintenance every %v simulated, %d cores\n",
		sim, speedup, r.WallS, rows, simLag, simPassEvery, r.Cores)
	fmt.Printf("  %-8s %12s %10s %6s %14s\n", "sim min", "json bytes", "snapshots", "tags", "metadata files")
	for _, p := range r.Samples {
		if p.SimMin%10 == 0 || p == last {
			fmt.Printf("  %-8d %12d %10d %6d %14d\n", p.SimMin, p.Bytes, p.Snapshots, p.Tags, p.Files)
		}
	}
	fmt.Printf("  %d of the files in metadata/ are referenced by no metadata.json, snapshot or manifest list (manifest lists and manifests of commit attempts that lost a race and were staged again; orphans removes them once an hour old)\n", r.Unreferenced)
	fmt.Printf("  commits %d (%d appends retried after losing to a maintenance commit); %d bytes a snapshot; loadTable p50/p99 %.2f/%.2f ms in the first tenth, %.2f/%.2f ms in the last (%d loads)\n",
		r.Commits, r.Retries, r.BytesPerSnapshot, r.LoadP50FirstMs, r.LoadP99FirstMs, r.LoadP50Ms, r.LoadP99Ms, r.Loads)
	r.Met = r.MaxMetadataBytes <= goalBytes && r.LoadP99Ms <= float64(goalLoadP99.Microseconds())/1000 &&
		float64(r.Commits) >= 0.9*sim.Seconds()
	harness.Target("metadata-flat-1h", fmt.Sprintf("%d KB, loadTable p99 %.2f ms, %d commits", r.MaxMetadataBytes>>10, r.LoadP99Ms, r.Commits),
		fmt.Sprintf("<= %d KB, <= %v, >= 90%% of %.0f commits", goalBytes>>10, goalLoadP99, sim.Seconds()), r.Met)
	return harness.WriteJSON(out, r)
}

// appendRetrying appends rec to the table, reloading it when a
// maintenance commit moved the head in between (409).
// It returns the new table and the number of retries.
func appendRetrying(ctx context.Context, cat *rest.Catalog, ident table.Identifier, tbl *table.Table, rec arrow.Table, props iceberg.Properties) (*table.Table, int, error) {
	for attempt := 0; ; attempt++ {
		next, err := tbl.AppendTable(ctx, rec, int64(rec.NumRows()), props)
		if err == nil {
			return next, attempt, nil
		}
		if attempt == 10 {
			return nil, attempt, err
		}
		if tbl, err = cat.LoadTable(ctx, ident); err != nil {
			return nil, attempt, err
		}
	}
}

// batch is n rows from offset start, spread over 3 partitions.
func batch(start int64, n int) arrow.Table {
	mem := memory.DefaultAllocator
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
		{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
		{Name: "origin", Type: arrow.BinaryTypes.String},
		{Name: "distance", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	origins := []string{"SEA", "SFO", "JFK", "ORD", "ATL"}
	for i := range int64(n) {
		off := start + i
		b.Field(0).(*array.Int32Builder).Append(int32(off % 3))
		b.Field(1).(*array.Int64Builder).Append(off)
		b.Field(2).(*array.StringBuilder).Append(origins[off%5])
		b.Field(3).(*array.Int64Builder).Append(off % 3000)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

// sample is the table's metadata state at simulated minute m.
func sample(tbl *table.Table, m int) (point, error) {
	loc := strings.TrimPrefix(tbl.MetadataLocation(), "file://")
	st, err := os.Stat(loc)
	if err != nil {
		return point{}, err
	}
	entries, err := os.ReadDir(filepath.Dir(loc))
	if err != nil {
		return point{}, err
	}
	p := point{SimMin: m, Bytes: st.Size(), Snapshots: len(tbl.Metadata().Snapshots()), Files: len(entries)}
	for _, ref := range tbl.Metadata().Refs() {
		if ref.SnapshotRefType == table.TagRef {
			p.Tags++
		}
	}
	return p, nil
}

// dropLines writes what it is given to w unless it contains substr.
type dropLines struct {
	w      io.Writer
	substr string
}

func (d dropLines) Write(p []byte) (int, error) {
	if strings.Contains(string(p), d.substr) {
		return len(p), nil
	}
	return d.w.Write(p)
}

// unreferenced counts the files in tbl's metadata directory that neither
// the current metadata.json, its metadata-log, nor any snapshot's
// manifest list or manifests name.
func unreferenced(ctx context.Context, tbl *table.Table) (int, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return 0, err
	}
	md := tbl.Metadata()
	ref := map[string]bool{filepath.Base(tbl.MetadataLocation()): true}
	for e := range md.PreviousFiles() {
		ref[filepath.Base(e.MetadataFile)] = true
	}
	for _, s := range md.Snapshots() {
		ref[filepath.Base(s.ManifestList)] = true
		ms, err := s.Manifests(fs)
		if err != nil {
			return 0, err
		}
		for _, m := range ms {
			ref[filepath.Base(m.FilePath())] = true
		}
	}
	entries, err := os.ReadDir(filepath.Dir(strings.TrimPrefix(tbl.MetadataLocation(), "file://")))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !ref[e.Name()] {
			n++
		}
	}
	return n, nil
}

// loader times loadTable round trips.
type loader struct {
	url string
	mu  sync.Mutex
	at  []time.Time
	ms  []float64
}

func (l *loader) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, l.url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue // the context ended
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			continue
		}
		l.mu.Lock()
		l.at = append(l.at, start)
		l.ms = append(l.ms, float64(time.Since(start).Microseconds())/1000)
		l.mu.Unlock()
	}
}

// window is the sorted latencies (ms) of the loads started in [from, to).
func (l *loader) window(from, to time.Time) []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []float64
	for i, at := range l.at {
		if !at.Before(from) && at.Before(to) {
			out = append(out, l.ms[i])
		}
	}
	slices.Sort(out)
	return out
}
