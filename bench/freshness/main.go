// Command freshness measures how long a Kafka record takes to become
// visible in its Iceberg table through Tarn (issue 3 "Freshness", issue 8
// item 2): the time from produce to the record being returned by a scan of
// the table as loadTable returns it.
//
// It starts a real Kafka broker (scripts/kafka.sh, Kafka 4.4 KRaft from
// Maven Central), an in-process Confluent-compatible registry (franz-go's
// srfake: the registry is asked once per schema id, so it does not take
// part in freshness) and the `tarn serve` binary given by -tarn, enables
// the topic with target-lag-ms -target-lag-ms, then produces the flights
// rows (Avro, Confluent wire format) at -rate rows/s for -duration. A
// reader polls loadTable through iceberg-go's REST client every
// -poll; on a new snapshot it scans the rows whose _kafka.timestamp is at
// or after the newest it has seen minus one second (the filter prunes old
// files by their column statistics) and records, for every (partition,
// offset) seen for the first time, now - _kafka.timestamp (the producer's
// CreateTime). Latency therefore includes the commit cadence, the
// catalog commit, the loadTable round trip and the scan.
//
// Output: a table on stdout, one line
//
//	target freshness-p99: 1.234 s (goal 2 s) met
//
// and the figures as JSON in -out.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/tarnhq/tarn/bench/internal/harness"
	"github.com/tarnhq/tarn/internal/demo"
)

// goalP99 is issue 3's freshness goal at target-lag-ms 1000; issue 20
// item 6 runs it again with -target-lag-ms 250 -goal-p99 500ms -target
// freshness-p99-250ms.
const goalP99 = 2 * time.Second

type result struct {
	Benchmark   string  `json:"benchmark"`
	Date        string  `json:"date"`
	Cores       int     `json:"cores"`
	TargetLagMs int     `json:"target_lag_ms"`
	RateRows    int     `json:"rate_rows_per_s"`
	DurationS   float64 `json:"duration_s"`
	Produced    int64   `json:"produced"`
	Seen        int     `json:"seen"`
	P50S        float64 `json:"p50_s"`
	P90S        float64 `json:"p90_s"`
	P99S        float64 `json:"p99_s"`
	MaxS        float64 `json:"max_s"`
	GoalP99S    float64 `json:"goal_p99_s"`
	Met         bool    `json:"met"`
}

func main() {
	tarnBin := flag.String("tarn", "bin/tarn", "the tarn binary")
	duration := flag.Duration("duration", 60*time.Second, "how long to produce")
	rate := flag.Int("rate", 2000, "rows produced per second")
	lagMs := flag.Int("target-lag-ms", 1000, "the topic's target-lag-ms")
	poll := flag.Duration("poll", 100*time.Millisecond, "how often the reader calls loadTable")
	out := flag.String("out", "bench/results/freshness.json", "where to write the JSON result")
	goal := flag.Duration("goal-p99", goalP99, "the p99 goal of the target line")
	target := flag.String("target", "freshness-p99", "the target line's name")
	flag.Parse()
	if err := run(*tarnBin, *duration, *rate, *lagMs, *poll, *goal, *target, *out); err != nil {
		log.Fatal(err)
	}
}

func run(tarnBin string, duration time.Duration, rate, lagMs int, poll, goal time.Duration, target, out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), duration+5*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "tarn-bench-freshness-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	kafkaDir := filepath.Join(tmp, "kafka")
	vars, err := harness.Script("scripts/kafka.sh", "start", kafkaDir)
	if err != nil {
		return err
	}
	defer harness.Script("scripts/kafka.sh", "stop", kafkaDir) //nolint:errcheck // best effort at exit
	bootstrap := vars["KAFKA_BOOTSTRAP"]

	reg := srfake.New()
	defer reg.Close()
	rc, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		return err
	}
	ss, err := rc.CreateSchema(ctx, demo.Subject, sr.Schema{Schema: demo.Schema})
	if err != nil {
		return err
	}
	rows, err := demo.Flights()
	if err != nil {
		return err
	}
	values, err := demo.Encode(rows, ss.ID)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	if res, err := kadm.NewClient(cl).CreateTopic(ctx, demo.Partitions, 1, nil, demo.Topic); err != nil || res.Err != nil {
		return fmt.Errorf("create topic: %w", errors.Join(err, res.Err))
	}

	base, tarn, err := harness.Serve(ctx, tarnBin, filepath.Join(tmp, "tarn"), nil,
		"--kafka-brokers", bootstrap, "--schema-registry-url", reg.URL())
	if err != nil {
		return err
	}
	defer func() { _ = tarn.Process.Kill(); _ = tarn.Wait() }()
	body, _ := json.Marshal(map[string]any{"topic": demo.Topic, "table": "bench.flights", "target-lag-ms": lagMs})
	resp, err := http.Post(base+"/management/v1/topics", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("enable: %s: %s", resp.Status, msg)
	}

	cat, err := rest.NewCatalog(ctx, "tarn", base)
	if err != nil {
		return err
	}
	rd := &reader{cat: cat, ident: table.Identifier{"bench", "flights"}, seen: map[[2]int64]bool{}}
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	var wg sync.WaitGroup
	wg.Go(func() { rd.run(readCtx, poll) })

	began := time.Now()
	var produced int64
	tick := time.NewTicker(10 * time.Millisecond)
	for time.Since(began) < duration {
		<-tick.C
		due := int64(time.Since(began).Seconds() * float64(rate))
		for ; produced < due; produced++ {
			cl.Produce(ctx, &kgo.Record{Topic: demo.Topic, Partition: int32(produced % demo.Partitions),
				Value: values[produced%int64(len(values))]}, func(_ *kgo.Record, err error) {
				if err != nil {
					log.Printf("produce: %v", err)
				}
			})
		}
	}
	tick.Stop()
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	// Let the reader see the last records.
	deadline := time.Now().Add(time.Duration(lagMs)*time.Millisecond + 30*time.Second)
	for rd.count() < int(produced) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	stopReading()
	wg.Wait()
	if rd.err != nil {
		return rd.err
	}

	lat := rd.latencies()
	slices.Sort(lat)
	r := result{Benchmark: "freshness", Date: time.Now().UTC().Format(time.RFC3339), Cores: runtime.NumCPU(),
		TargetLagMs: lagMs, RateRows: rate, DurationS: duration.Seconds(), Produced: produced, Seen: len(lat),
		P50S: harness.Pct(lat, 0.50), P90S: harness.Pct(lat, 0.90), P99S: harness.Pct(lat, 0.99), MaxS: harness.Pct(lat, 1), GoalP99S: goal.Seconds()}
	r.Met = r.Seen == int(produced) && r.P99S <= goal.Seconds()
	fmt.Printf("freshness (produce → visible via loadTable + scan), target-lag-ms %d, %d rows/s for %v, %d cores\n",
		lagMs, rate, duration, r.Cores)
	fmt.Printf("  %-10s %10s\n  %-10s %10d\n  %-10s %10d\n  %-10s %9.3fs\n  %-10s %9.3fs\n  %-10s %9.3fs\n  %-10s %9.3fs\n",
		"", "value", "produced", r.Produced, "seen", r.Seen, "p50", r.P50S, "p90", r.P90S, "p99", r.P99S, "max", r.MaxS)
	harness.Target(target, fmt.Sprintf("%.3f s", r.P99S), fmt.Sprintf("%g s", goal.Seconds()), r.Met)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// reader polls the table and records first-seen latencies.
type reader struct {
	cat   *rest.Catalog
	ident table.Identifier
	err   error

	mu      sync.Mutex
	seen    map[[2]int64]bool
	lat     []float64 // seconds
	newest  int64     // newest _kafka.timestamp seen, µs
	current int64     // snapshot id last scanned
}

func (r *reader) run(ctx context.Context, poll time.Duration) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.once(ctx); err != nil && ctx.Err() == nil {
			r.err = err
			return
		}
	}
}

func (r *reader) once(ctx context.Context) error {
	tbl, err := r.cat.LoadTable(ctx, r.ident)
	if err != nil {
		return err
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil || snap.SnapshotID == r.current {
		return nil
	}
	r.current = snap.SnapshotID
	from := time.UnixMicro(r.newest).Add(-time.Second)
	scan := tbl.Scan(table.WithRowFilter(iceberg.GreaterThanEqual(iceberg.Reference("_kafka.timestamp"),
		from.UTC().Format("2006-01-02T15:04:05.999999Z07:00"))), table.WithSelectedFields("_kafka"))
	_, recs, err := scan.ToArrowRecords(ctx)
	if err != nil {
		return err
	}
	for rec, err := range recs {
		if err != nil {
			return err
		}
		now := time.Now()
		k := rec.Column(0).(*array.Struct)
		part := k.Field(0).(*array.Int32)
		off := k.Field(1).(*array.Int64)
		ts := k.Field(2).(*array.Timestamp)
		r.mu.Lock()
		for i := range int(rec.NumRows()) {
			key := [2]int64{int64(part.Value(i)), off.Value(i)}
			if r.seen[key] {
				continue
			}
			r.seen[key] = true
			us := int64(ts.Value(i))
			r.newest = max(r.newest, us)
			r.lat = append(r.lat, now.Sub(time.UnixMicro(us)).Seconds())
		}
		r.mu.Unlock()
		rec.Release()
	}
	return nil
}

func (r *reader) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func (r *reader) latencies() []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lat)
}
