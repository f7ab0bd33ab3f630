// Command ingest measures ingest throughput (issue 8 item 1): the rows of
// ../shared/data/flights-3m.parquet (or, in a clone without it, the
// committed 220,000-row sample repeated to 3,000,000 rows with its dates
// moved on by two weeks a copy: internal/sample), produced as Avro in the Confluent
// wire format to a real Kafka broker (scripts/kafka.sh, one topic of 6
// partitions), materialized into an Iceberg table by three writers in
// one run:
//
//   - limit: Tarn's own decode and write path with no Kafka and no
//     catalog commit, in this process: the same record values decoded by
//     ingest/avro into Arrow and written by ingest/sink as zstd Parquet
//     (BenchmarkDecodeToParquet's path, batches of -limit-batch rows) into
//     the table tarn serve makes (with _kafka, day partitions); also
//     "limit-user-only", BenchmarkDecodeToParquet's own table (user
//     columns only, unpartitioned), for reference;
//   - tarn: the real `tarn serve` (-tarn), the topic enabled over the
//     management API with target-file-size-bytes -file-bytes and
//     target-lag-ms -lag-ms, until the status reports every row committed;
//   - kafka-connect: Kafka Connect standalone (the same Kafka release) with
//     Apache Iceberg's sink writing the topic into a table in the same
//     Tarn catalog (REST, local files), until the table's snapshot summary
//     counts every row. Jars from bench/kafkaconnect/setup.sh.
//
// CPU is each writer's own process CPU time (utime + stime of
// /proc/PID/stat, or getrusage for the limit), between the moment it is
// told to start and the moment every row is committed; the broker and
// the producer are not counted. Peak RSS is VmHWM. For tarn, CPU and heap
// profiles come from TARN_PPROF_LISTEN (cmd/tarn/pprof.go), CPU in
// consecutive 2 s windows merged with `go tool pprof -proto`; the limit's
// CPU profile is taken in process.
//
// Output: a table, one "target ..." line per published target, and JSON in
// -out; profiles in -profiles.
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
	"math"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	hamba "github.com/hamba/avro/v2"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/tarnhq/tarn/bench/internal/harness"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/sample"
	"github.com/tarnhq/tarn/spec"
)

// Published targets (issue 8, "Done means").
const (
	goalRowsPerCore   = 1.5e6 // rows/s per core used
	goalVsLimit       = 0.70  // tarn / limit, rows/s per core
	goalVsKafkaConect = 5.0   // tarn / Kafka Connect, rows/s per core
	// Issue 16 ("Done means"): ingest with the Delta output on, as a
	// share of ingest with it off (rows/s per core), and the p99 of the
	// publish lag (an Iceberg commit → the Delta version reflecting it).
	goalDeltaVsOff      = 0.90
	goalDeltaPublishP99 = 1.0 // seconds
	partitions          = 6
	topic               = "flights"
)

// side is one writer's figures.
type side struct {
	Name         string  `json:"name"`
	Rows         int64   `json:"rows"`
	WallS        float64 `json:"wall_s"`
	CPUS         float64 `json:"cpu_s"`
	RowsPerS     float64 `json:"rows_per_s"`
	RowsPerCoreS float64 `json:"rows_per_s_per_core"`
	MiBPerS      float64 `json:"payload_mib_per_s"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	Files        int64   `json:"files,omitempty"`
	Commits      int64   `json:"commits,omitempty"`
	Note         string  `json:"note,omitempty"`
}

func (s *side) derive(payload int64) {
	s.RowsPerS = float64(s.Rows) / s.WallS
	s.RowsPerCoreS = float64(s.Rows) / s.CPUS
	s.MiBPerS = float64(payload) / (1 << 20) / s.WallS
}

type result struct {
	Benchmark       string  `json:"benchmark"`
	Date            string  `json:"date"`
	Cores           int     `json:"cores"`
	Rows            int64   `json:"rows"`
	Data            string  `json:"data"`
	Partitions      int     `json:"partitions"`
	PayloadBytes    int64   `json:"payload_bytes"`
	ProduceS        float64 `json:"produce_s"`
	TargetLagMs     int64   `json:"target_lag_ms"`
	TargetFileBytes int64   `json:"target_file_size_bytes"`
	Limit           *side   `json:"limit"`
	LimitUser       *side   `json:"limit_user_columns_only"`
	Tarn            *side   `json:"tarn"`
	TarnDelta       *side   `json:"tarn_delta,omitempty"`
	DeltaVsOff      float64 `json:"delta_vs_off,omitempty"`
	// DeltaPublishP99S is the p99 of tarn_delta_publish_lag_seconds
	// over the Delta run: the upper bound of the histogram bucket it
	// falls in.
	DeltaPublishP99S  float64         `json:"delta_publish_lag_p99_s,omitempty"`
	KafkaConnect      *side           `json:"kafka_connect,omitempty"`
	KafkaConnectError string          `json:"kafka_connect_error,omitempty"`
	TarnVsLimit       float64         `json:"tarn_vs_limit"`
	TarnVsKafkaConn   float64         `json:"tarn_vs_kafka_connect,omitempty"`
	Met               map[string]bool `json:"met"`
}

type options struct {
	tarn, data, out, profiles string
	rows                      int
	lagMs, fileBytes          int64
	limitBatch                int
	kafkaConnect              bool
	delta                     bool
	kcTasks                   int
	kcTimeout                 time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.tarn, "tarn", "bin/tarn", "the tarn binary")
	flag.StringVar(&o.data, "data", "", "the flights parquet file (default: "+sharedFlights+" when present, else the committed sample repeated to -rows)")
	flag.IntVar(&o.rows, "rows", 0, "rows to use (0: all of -data, or "+strconv.Itoa(sampleRows)+" of the repeated sample)")
	flag.Int64Var(&o.lagMs, "lag-ms", 5000, "the topic's target-lag-ms")
	flag.Int64Var(&o.fileBytes, "file-bytes", 128<<20, "the topic's target-file-size-bytes")
	flag.IntVar(&o.limitBatch, "limit-batch", 1_000_000, "rows per data file written by the limit")
	flag.BoolVar(&o.kafkaConnect, "kafka-connect", true, "also run Apache Iceberg's Kafka Connect sink")
	flag.BoolVar(&o.delta, "delta", true, `also run tarn serve with the topic's Delta Lake output on ("delta": true), into a fresh data dir`)
	flag.IntVar(&o.kcTasks, "kafka-connect-tasks", 2, "the Kafka Connect sink's tasks.max")
	flag.DurationVar(&o.kcTimeout, "kafka-connect-timeout", 10*time.Minute, "give up on Kafka Connect after this long")
	flag.StringVar(&o.out, "out", "bench/results/ingest.json", "where to write the JSON result")
	flag.StringVar(&o.profiles, "profiles", "bench/results", "where to write the pprof profiles")
	flag.Parse()
	if err := run(o); err != nil {
		log.Fatal(err)
	}
}

// sharedFlights is the dataset RESULTS.md was measured on, beside the
// repository where the project's machines keep it; sampleRows is the row
// count the committed sample is repeated to without it (the dataset's).
const (
	sharedFlights = "../shared/data/flights-3m.parquet"
	sampleRows    = 3_000_000
)

// readRows reads the first n rows (0: all) of the flights parquet file at
// path; with no path, of sharedFlights when it exists, else n rows
// (0: sampleRows) of the committed sample repeated (sample.Repeat).
func readRows(path string, n int) (rows []demo.Flight, source string, err error) {
	if path == "" {
		if _, err := os.Stat(sharedFlights); err != nil {
			if n == 0 {
				n = sampleRows
			}
			source = fmt.Sprintf("%s repeated to %d rows, each copy two weeks later (%s not found)", sample.File, n, sharedFlights)
			log.Printf("using %s", source)
			rows, err := sample.Flights(0)
			if err != nil {
				return nil, "", err
			}
			return sample.Repeat(rows, n, sample.Span), source, nil
		}
		path = sharedFlights
	}
	log.Printf("reading %s", path)
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	rows, err = demo.ReadFlights(f, n)
	return rows, path, err
}

func run(o options) error {
	// On Ctrl-C the context ends: exec.CommandContext kills tarn and the
	// Kafka Connect worker, and the deferred stops run.
	sctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sctx, 30*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "tarn-bench-ingest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	rows, source, err := readRows(o.data, o.rows)
	if err != nil {
		return err
	}
	reg := srfake.New()
	defer reg.Close()
	rc, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		return err
	}
	ss, err := rc.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: demo.Schema})
	if err != nil {
		return err
	}
	values, err := demo.Encode(rows, ss.ID)
	if err != nil {
		return err
	}
	rows = nil
	var payload int64
	for _, v := range values {
		payload += int64(len(v))
	}
	n := int64(len(values))
	r := result{Benchmark: "ingest", Date: time.Now().UTC().Format(time.RFC3339), Cores: runtime.NumCPU(),
		Rows: n, Data: source, Partitions: partitions, PayloadBytes: payload, TargetLagMs: o.lagMs, TargetFileBytes: o.fileBytes,
		Met: map[string]bool{}}
	log.Printf("%d rows, %.1f MiB of record values (%.1f bytes a row)", n, float64(payload)/(1<<20), float64(payload)/float64(n))

	// (a) The limit, first, while no broker runs.
	if err := os.MkdirAll(o.profiles, 0o755); err != nil {
		return err
	}
	if r.Limit, err = limit(ctx, "limit", values, o.limitBatch, true, filepath.Join(tmp, "limit"),
		filepath.Join(o.profiles, "ingest-limit-cpu.pprof")); err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	r.Limit.derive(payload)
	log.Printf("limit: %.0f rows/s per core", r.Limit.RowsPerCoreS)
	if r.LimitUser, err = limit(ctx, "limit-user-only", values, o.limitBatch, false, filepath.Join(tmp, "limit-user"), ""); err != nil {
		return fmt.Errorf("limit (user columns): %w", err)
	}
	r.LimitUser.derive(payload)
	log.Printf("limit, user columns only: %.0f rows/s per core", r.LimitUser.RowsPerCoreS)

	// The broker and the topic, produced in full before any writer starts.
	kafkaDir := filepath.Join(tmp, "kafka")
	vars, err := harness.Script("scripts/kafka.sh", "start", kafkaDir)
	if err != nil {
		return err
	}
	defer harness.Script("scripts/kafka.sh", "stop", kafkaDir) //nolint:errcheck // best effort at exit
	bootstrap := vars["KAFKA_BOOTSTRAP"]
	if r.ProduceS, err = produce(ctx, bootstrap, values); err != nil {
		return err
	}
	log.Printf("produced %d records in %.1f s", n, r.ProduceS)
	values = nil
	runtime.GC()

	// (b) tarn serve.
	base, stopTarn, err := startTarn(ctx, o, filepath.Join(tmp, "tarn"), bootstrap, reg.URL())
	if err != nil {
		return err
	}
	defer stopTarn()
	if r.Tarn, err = tarnSide(ctx, base.api, base.pprof, base.pid, n, o, false); err != nil {
		return fmt.Errorf("tarn: %w", err)
	}
	r.Tarn.derive(payload)
	log.Printf("tarn: %.0f rows/s per core", r.Tarn.RowsPerCoreS)

	// (b') tarn serve again, the topic published as a Delta table too.
	if o.delta {
		dbase, stopDelta, err := startTarn(ctx, o, filepath.Join(tmp, "tarn-delta"), bootstrap, reg.URL())
		if err != nil {
			return err
		}
		r.TarnDelta, err = tarnSide(ctx, dbase.api, dbase.pprof, dbase.pid, n, o, true)
		if err == nil {
			r.DeltaPublishP99S, err = deltaPublishP99(ctx, dbase.api)
		}
		stopDelta()
		if err != nil {
			return fmt.Errorf("tarn with delta: %w", err)
		}
		r.TarnDelta.derive(payload)
		r.DeltaVsOff = r.TarnDelta.RowsPerCoreS / r.Tarn.RowsPerCoreS
		log.Printf("tarn with delta: %.0f rows/s per core", r.TarnDelta.RowsPerCoreS)
	}

	// (c) Kafka Connect, into the same catalog.
	if o.kafkaConnect {
		kc, err := kafkaConnect(ctx, base.api, bootstrap, filepath.Join(tmp, "kafka-connect"), n, o)
		if err != nil {
			r.KafkaConnectError = err.Error()
			log.Printf("kafka connect: %v", err)
		} else {
			kc.derive(payload)
			r.KafkaConnect = kc
		}
	}

	r.TarnVsLimit = r.Tarn.RowsPerCoreS / r.Limit.RowsPerCoreS
	if r.KafkaConnect != nil {
		r.TarnVsKafkaConn = r.Tarn.RowsPerCoreS / r.KafkaConnect.RowsPerCoreS
	}
	report(&r)
	return harness.WriteJSON(o.out, r)
}

func report(r *result) {
	fmt.Printf("ingest: %d flights rows (%.1f MiB of Avro record values, %d partitions), %d cores, target-lag-ms %d, target-file-size-bytes %d\n",
		r.Rows, float64(r.PayloadBytes)/(1<<20), r.Partitions, r.Cores, r.TargetLagMs, r.TargetFileBytes)
	fmt.Printf("  data: %s\n", r.Data)
	fmt.Printf("  %-14s %8s %8s %12s %14s %9s %10s\n", "writer", "wall s", "cpu s", "rows/s", "rows/s/core", "MiB/s", "peak RSS")
	for _, s := range []*side{r.Limit, r.LimitUser, r.Tarn, r.TarnDelta, r.KafkaConnect} {
		if s == nil {
			continue
		}
		fmt.Printf("  %-14s %8.2f %8.2f %12.0f %14.0f %9.2f %8.0f MiB\n", s.Name, s.WallS, s.CPUS, s.RowsPerS,
			s.RowsPerCoreS, s.MiBPerS, float64(s.PeakRSSBytes)/(1<<20))
	}
	if r.KafkaConnectError != "" {
		fmt.Printf("  kafka-connect: not measured: %s\n", r.KafkaConnectError)
	}
	fmt.Printf("  tarn / limit (rows/s per core): %.2f\n", r.TarnVsLimit)
	if r.KafkaConnect != nil {
		fmt.Printf("  tarn / kafka-connect (rows/s per core): %.2f; (rows/s): %.2f\n", r.TarnVsKafkaConn,
			r.Tarn.RowsPerS/r.KafkaConnect.RowsPerS)
	}
	r.Met["ingest-rows-per-core"] = harness.Target("ingest-rows-per-core", fmt.Sprintf("%.2f M rows/s", r.Tarn.RowsPerCoreS/1e6),
		fmt.Sprintf("≥ %.1f M rows/s", goalRowsPerCore/1e6), r.Tarn.RowsPerCoreS >= goalRowsPerCore)
	r.Met["ingest-vs-limit"] = harness.Target("ingest-vs-limit", fmt.Sprintf("%.0f%%", 100*r.TarnVsLimit),
		fmt.Sprintf("≥ %.0f%%", 100*goalVsLimit), r.TarnVsLimit >= goalVsLimit)
	if r.TarnDelta != nil {
		r.Met["ingest-delta-vs-off"] = harness.Target("ingest-delta-vs-off", fmt.Sprintf("%.0f%%", 100*r.DeltaVsOff),
			fmt.Sprintf("≥ %.0f%%", 100*goalDeltaVsOff), r.DeltaVsOff >= goalDeltaVsOff)
		r.Met["delta-publish-lag-p99"] = harness.Target("delta-publish-lag-p99", fmt.Sprintf("≤ %gs", r.DeltaPublishP99S),
			fmt.Sprintf("≤ %gs at target-lag-ms %d", goalDeltaPublishP99, r.TargetLagMs), r.DeltaPublishP99S <= goalDeltaPublishP99)
	}
	if r.KafkaConnect != nil {
		r.Met["ingest-vs-kafka-connect"] = harness.Target("ingest-vs-kafka-connect", fmt.Sprintf("%.1f×", r.TarnVsKafkaConn),
			fmt.Sprintf("≥ %.0f×", goalVsKafkaConect), r.TarnVsKafkaConn >= goalVsKafkaConect)
	} else {
		r.Met["ingest-vs-kafka-connect"] = harness.Target("ingest-vs-kafka-connect", "not measured",
			fmt.Sprintf("≥ %.0f×", goalVsKafkaConect), false)
	}
}

// limit decodes and writes values the way BenchmarkDecodeToParquet does
// (ingest/avro → Arrow records of 64 Ki rows → sink.Write, zstd Parquet
// with field IDs and statistics), batch rows per data file, into a table
// of a bolt-backed catalog in dir; nothing is committed. With withKafka
// the table is the one tarn serve makes (pipeline.EnsureTable: the user
// columns plus _kafka, partitioned by day(_kafka.timestamp)) and every row
// gets its _kafka value as the pipeline appends it (partition i % 6,
// offset i / 6, a timestamp, null key, no headers); without, only the
// user columns, unpartitioned (BenchmarkDecodeToParquet's table). CPU is
// this process's getrusage over the loop, with a CPU profile to cpuProf
// when it is not empty.
func limit(ctx context.Context, name string, values [][]byte, batch int, withKafka bool, dir, cpuProf string) (*side, error) {
	writer, err := hamba.Parse(demo.Schema)
	if err != nil {
		return nil, err
	}
	user, err := avro.ToIceberg(writer)
	if err != nil {
		return nil, err
	}
	wh, err := catalog.NewWarehouse(catalog.DefaultWarehouse, "file://"+filepath.Join(dir, "warehouse"), nil)
	if err != nil {
		return nil, err
	}
	store, err := bolt.Open(dir)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh}})
	if err != nil {
		return nil, err
	}
	var opts []codec.Option
	if withKafka {
		cfg := pipeline.Config{Topic: topic, Cluster: "c", Table: catalog.Ident{Namespace: catalog.Namespace{"bench"}, Name: "flights"}}
		if _, err := pipeline.EnsureTable(ctx, cat, wh, cfg.WithDefaults(), user); err != nil {
			return nil, err
		}
		opts = append(opts, codec.WithCallerColumns(pipeline.KafkaColumn))
	} else {
		if err := cat.CreateNamespace(ctx, catalog.Namespace{"bench"}, nil); err != nil {
			return nil, err
		}
		if _, err := cat.CreateTable(ctx, wh, catalog.Namespace{"bench"}, spec.CreateTableRequest{Name: "flights",
			Schema: user, PartitionSpec: &iceberg.UnboundPartitionSpec{}}); err != nil {
			return nil, err
		}
	}
	s, err := sink.Open(ctx, cat.TableIO(wh), sink.Config{Table: table.Identifier{"bench", "flights"}, Cluster: "c", Topic: topic})
	if err != nil {
		return nil, err
	}
	dec, err := avro.NewDecoder(writer, s.Table().Schema(), opts...)
	if err != nil {
		return nil, err
	}
	if cpuProf != "" {
		pf, err := os.Create(cpuProf)
		if err != nil {
			return nil, err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	runtime.GC()
	cpu0 := selfCPU()
	t0 := time.Now()
	base := t0.UnixMicro()
	var h sr.ConfluentHeader
	var files int64
	for from := 0; from < len(values); from += batch {
		to := min(from+batch, len(values))
		bld := array.NewRecordBuilder(memory.DefaultAllocator, dec.ArrowSchema())
		var ka *kafkaCols
		if withKafka {
			if ka, err = newKafkaCols(bld); err != nil {
				return nil, err
			}
		}
		var recs []arrow.RecordBatch
		for i, v := range values[from:to] {
			_, p, err := h.DecodeID(v)
			if err != nil {
				return nil, err
			}
			if err := dec.Append(bld, p); err != nil {
				return nil, err
			}
			if ka != nil {
				n := int64(from + i)
				ka.append(int32(n%partitions), n/partitions, base+n)
			}
			if bld.Field(0).Len() == 64<<10 {
				recs = append(recs, bld.NewRecordBatch())
			}
		}
		recs = append(recs, bld.NewRecordBatch())
		bld.Release()
		w, err := s.Write(ctx, sink.Batch{Records: recs, Ranges: map[int32]sink.Range{0: {Start: int64(from), End: int64(to)}}})
		if err != nil {
			return nil, err
		}
		if w.Rows != int64(to-from) {
			return nil, fmt.Errorf("wrote %d rows, want %d", w.Rows, to-from)
		}
		for _, r := range recs {
			r.Release()
		}
		files++
	}
	wall := time.Since(t0).Seconds()
	cpu := selfCPU() - cpu0
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	note := "in process, no Kafka, no commit; the table tarn serve makes (user columns + _kafka, day partitions)"
	if !withKafka {
		note = "in process, no Kafka, no commit; user columns only, unpartitioned (BenchmarkDecodeToParquet's table)"
	}
	return &side{Name: name, Rows: int64(len(values)), WallS: wall, CPUS: cpu, Files: files,
		PeakRSSBytes: ru.Maxrss << 10, Note: note + "; peak RSS is the bench process's (it also holds every record value)"}, nil
}

// kafkaCols appends the _kafka struct as ingest/pipeline's kafkaAppender
// does (DESIGN.md's shape: partition, offset, timestamp, key, headers).
type kafkaCols struct {
	col       *array.StructBuilder
	partition *array.Int32Builder
	offset    *array.Int64Builder
	timestamp *array.TimestampBuilder
	key       *array.BinaryBuilder
	headers   *array.ListBuilder
}

func newKafkaCols(b *array.RecordBuilder) (*kafkaCols, error) {
	idx := b.Schema().FieldIndices(pipeline.KafkaColumn)
	if len(idx) != 1 {
		return nil, fmt.Errorf("no %s column", pipeline.KafkaColumn)
	}
	k := &kafkaCols{}
	var ok bool
	if k.col, ok = b.Field(idx[0]).(*array.StructBuilder); !ok {
		return nil, fmt.Errorf("%s is not a struct", pipeline.KafkaColumn)
	}
	st := k.col.Type().(*arrow.StructType)
	field := func(name string) array.Builder {
		i, found := st.FieldIdx(name)
		if !found {
			return nil
		}
		return k.col.FieldBuilder(i)
	}
	k.partition, _ = field("partition").(*array.Int32Builder)
	k.offset, _ = field("offset").(*array.Int64Builder)
	k.timestamp, _ = field("timestamp").(*array.TimestampBuilder)
	k.key, _ = field("key").(*array.BinaryBuilder)
	k.headers, _ = field("headers").(*array.ListBuilder)
	if k.partition == nil || k.offset == nil || k.timestamp == nil || k.key == nil || k.headers == nil {
		return nil, fmt.Errorf("%s is %s", pipeline.KafkaColumn, st)
	}
	return k, nil
}

func (k *kafkaCols) append(partition int32, offset, tsMicros int64) {
	k.col.Append(true)
	k.partition.Append(partition)
	k.offset.Append(offset)
	k.timestamp.Append(arrow.Timestamp(tsMicros))
	k.key.AppendNull()
	k.headers.Append(true)
}

func selfCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// produce creates the topic and writes every value, record i to
// partition i % partitions, acks=all, then flushes.
func produce(ctx context.Context, bootstrap string, values [][]byte) (float64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(200_000), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if res, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil || res.Err != nil {
		return 0, fmt.Errorf("create topic: %w", errors.Join(err, res.Err))
	}
	// Iceberg's sink coordinates through this topic; created here so that
	// its first commit does not wait for auto-creation.
	if res, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "control-iceberg"); err != nil || res.Err != nil {
		return 0, fmt.Errorf("create control topic: %w", errors.Join(err, res.Err))
	}
	t0 := time.Now()
	var mu sync.Mutex
	var first error
	for i, v := range values {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = cmp(first, err)
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	return time.Since(t0).Seconds(), first
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// topicStatus is the part of GET /management/v1/topics/{topic} used here.
type topicStatus struct {
	State        string `json:"state"`
	Reason       string `json:"reason"`
	Rows         int64  `json:"rows"`
	BufferedRows int64  `json:"buffered-rows"`
	Files        int64  `json:"files"`
	Commits      int64  `json:"commits"`
}

// tarnSide enables the topic and waits until n rows are committed,
// profiling meanwhile.
// tarnAddrs are a started tarn serve's API and pprof base URLs and pid.
type tarnAddrs struct {
	api, pprof string
	pid        int
}

// startTarn starts tarn serve on a fresh data dir and waits for /healthz;
// stop kills it.
func startTarn(ctx context.Context, o options, dir, bootstrap, registry string) (tarnAddrs, func(), error) {
	addr, err := harness.FreeAddr()
	if err != nil {
		return tarnAddrs{}, nil, err
	}
	paddr, err := harness.FreeAddr()
	if err != nil {
		return tarnAddrs{}, nil, err
	}
	tarn := exec.CommandContext(ctx, o.tarn, "serve", "--listen", addr, "--data-dir", dir,
		"--kafka-brokers", bootstrap, "--schema-registry-url", registry, "--log-level", "warn")
	tarn.Env = append(os.Environ(), "TARN_PPROF_LISTEN="+paddr)
	tarn.Stderr = os.Stderr
	if err := tarn.Start(); err != nil {
		return tarnAddrs{}, nil, err
	}
	stop := func() { _ = tarn.Process.Kill(); _ = tarn.Wait() }
	base := "http://" + addr
	if err := harness.WaitHTTP(ctx, base+"/healthz", 30*time.Second); err != nil {
		stop()
		return tarnAddrs{}, nil, err
	}
	return tarnAddrs{api: base, pprof: "http://" + paddr, pid: tarn.Process.Pid}, stop, nil
}

// deltaPublishP99 reads tarn_delta_publish_lag_seconds from base's
// /metrics and returns the upper bound of the bucket its p99 falls in.
func deltaPublishP99(ctx context.Context, base string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, err
	}
	f := fams["tarn_delta_publish_lag_seconds"]
	if f == nil || len(f.GetMetric()) == 0 {
		return 0, fmt.Errorf("no tarn_delta_publish_lag_seconds in /metrics")
	}
	h := f.GetMetric()[0].GetHistogram()
	if h.GetSampleCount() == 0 {
		return 0, fmt.Errorf("no Delta version was published")
	}
	want := 0.99 * float64(h.GetSampleCount())
	for _, b := range h.GetBucket() {
		if float64(b.GetCumulativeCount()) >= want {
			return b.GetUpperBound(), nil
		}
	}
	return math.Inf(1), nil
}

func tarnSide(ctx context.Context, base, pprofBase string, pid int, n int64, o options, delta bool) (*side, error) {
	cpu0, err := harness.CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(map[string]any{"topic": topic, "table": "bench.flights", "target-lag-ms": o.lagMs,
		"target-file-size-bytes": o.fileBytes, "delta": delta})
	t0 := time.Now()
	resp, err := http.Post(base+"/management/v1/topics", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("enable: %s: %s", resp.Status, msg)
	}
	prof := &profiler{base: pprofBase, dir: filepath.Join(os.TempDir(), fmt.Sprintf("tarn-bench-prof-%d", os.Getpid()))}
	defer os.RemoveAll(prof.dir)
	var stop atomic.Bool
	defer stop.Store(true)
	var wg sync.WaitGroup
	wg.Go(func() { prof.loop(ctx, &stop) })
	var st topicStatus
	for {
		if err := getJSON(ctx, base+"/management/v1/topics/"+topic, &st); err != nil {
			return nil, err
		}
		if st.Rows >= n {
			break
		}
		if st.State == "failed" || st.State == "suspended" {
			return nil, fmt.Errorf("topic %s: %s", st.State, st.Reason)
		}
		if time.Since(t0) > 10*time.Minute {
			return nil, fmt.Errorf("only %d of %d rows committed after 10 minutes", st.Rows, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wall := time.Since(t0).Seconds()
	cpu1, err := harness.CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	rss, err := harness.PeakRSSBytes(pid)
	if err != nil {
		return nil, err
	}
	stop.Store(true)
	wg.Wait()
	name := "tarn"
	if delta {
		name = "tarn-delta"
	}
	if err := prof.save(ctx, filepath.Join(o.profiles, "ingest-"+name+"-cpu.pprof"), filepath.Join(o.profiles, "ingest-"+name+"-heap.pprof")); err != nil {
		log.Printf("profiles: %v", err)
	}
	return &side{Name: name, Rows: st.Rows, WallS: wall, CPUS: cpu1 - cpu0, PeakRSSBytes: rss, Files: st.Files,
		Commits: st.Commits, Note: "tarn serve, enable → every row committed; wall includes up to target-lag-ms for the last batch"}, nil
}

// profiler takes consecutive CPU profiles of 2 s from a pprof endpoint
// until stop is set; the window in flight then completes, so the last
// commit's work is in the profile.
type profiler struct {
	base, dir string
	files     []string
}

func (p *profiler) loop(ctx context.Context, stop *atomic.Bool) {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return
	}
	for i := 0; !stop.Load() && ctx.Err() == nil; i++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/debug/pprof/profile?seconds=2", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return
		}
		name := filepath.Join(p.dir, "cpu-"+strconv.Itoa(i)+".pprof")
		if os.WriteFile(name, b, 0o644) == nil {
			p.files = append(p.files, name)
		}
	}
}

// save merges the CPU windows into cpuOut and fetches the heap profile
// (in use and allocated since start) into heapOut.
func (p *profiler) save(ctx context.Context, cpuOut, heapOut string) error {
	if len(p.files) > 0 {
		cmd := exec.CommandContext(ctx, "go", append([]string{"tool", "pprof", "-proto"}, p.files...)...)
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("go tool pprof -proto: %w", err)
		}
		if err := os.WriteFile(cpuOut, out, 0o644); err != nil {
			return err
		}
	}
	resp, err := http.Get(p.base + "/debug/pprof/heap")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(heapOut, b, 0o644)
}

func getJSON(ctx context.Context, u string, v any) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	return json.Unmarshal(b, v)
}
