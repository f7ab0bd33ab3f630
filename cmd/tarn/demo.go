package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/server"
)

// demoTable is the table `tarn demo` materializes the flights topic into.
const demoTable = "demo.flights"

type demoConfig struct {
	serve     serveConfig
	rate      int
	rows      int64
	targetLag time.Duration
}

func newDemoCmd() *cobra.Command {
	var cfg demoConfig
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Stream flights through an in-process Kafka into a live Iceberg table",
		Long: `Start an in-process Kafka (franz-go kfake, topic flights, 3 partitions) and
schema registry, produce the flights rows as Avro at --rate rows/s, materialize
the topic into the table demo.flights, and serve the catalog on --listen, as
tarn serve does. Stop with Ctrl-C: buffered rows are committed first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.rate < 1 {
				return fmt.Errorf("--rate must be at least 1, got %d", cfg.rate)
			}
			if cfg.rows < 0 {
				return fmt.Errorf("--rows must not be negative, got %d", cfg.rows)
			}
			// Checked here, in the flag's own terms: passed on as
			// target-lag-ms, 0 would silently become the topic default
			// (10 s) and a refusal would name target-lag-ms.
			if cfg.targetLag < pipeline.MinTargetLag {
				return fmt.Errorf("--target-lag must be at least %s, got %s", pipeline.MinTargetLag, cfg.targetLag)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runDemo(ctx, cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.serve.listen, "listen", defaultListen, "address to serve HTTP on (host:port)")
	f.StringVar(&cfg.serve.dataDir, "data-dir", "", "directory for the catalog and warehouse (default: a temp dir removed on exit)")
	f.StringVar(&cfg.serve.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.IntVar(&cfg.rate, "rate", 1000, "rows produced per second")
	f.Int64Var(&cfg.rows, "rows", 0, "stop producing after this many rows (0: never)")
	f.DurationVar(&cfg.targetLag, "target-lag", 2*time.Second, "commit buffered rows at least this often (at least 250ms)")
	cfg.serve.idempotencyKeyLifetime = server.DefaultIdempotencyKeyLifetime
	cfg.serve.ingestMemoryBytes = pipeline.DefaultMemoryBytes
	return cmd
}

func runDemo(ctx context.Context, cfg demoConfig, stdout io.Writer) error {
	started := time.Now()
	if cfg.serve.dataDir == "" {
		dir, err := os.MkdirTemp("", "tarn-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.serve.dataDir = dir
	}
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic), kfake.ClusterID(demoCluster))
	if err != nil {
		return fmt.Errorf("start kafka: %w", err)
	}
	defer kc.Close()
	reg := srfake.New()
	defer reg.Close()
	rc, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		return err
	}
	ss, err := rc.CreateSchema(ctx, demo.Subject, sr.Schema{Schema: demo.Schema})
	if err != nil {
		return fmt.Errorf("register schema: %w", err)
	}
	rows, err := demo.Flights()
	if err != nil {
		return err
	}
	values, err := demo.Encode(rows, ss.ID)
	if err != nil {
		return err
	}

	// The demo's Kafka and registry are the topic manager's, so the topic
	// is enabled exactly as through the management API of tarn serve.
	brokers := kc.ListenAddrs()
	cs, err := openCatalog(cfg.serve, ingestDeps{Brokers: brokers, Registry: rc})
	if err != nil {
		return err
	}
	defer cs.close()
	log := cs.log
	lagMs := cfg.targetLag.Milliseconds()
	_, err = cs.topics.Enable(ctx, topics.TopicConfig{Topic: demo.Topic, Table: demoTable, TargetLagMs: lagMs})
	if errors.Is(err, topics.ErrAlreadyEnabled) {
		// A --data-dir from an earlier demo: the topic is running already.
		_, err = cs.topics.Update(ctx, demo.Topic, topics.Patch{TargetLagMs: &lagMs})
	}
	if err != nil {
		return fmt.Errorf("enable topic %s: %w", demo.Topic, err)
	}
	prodClient, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer prodClient.Close()
	prod := &demo.Producer{Client: prodClient, Values: values, Rate: cfg.rate, Limit: cfg.rows}

	// A failure of the producer, or a suspension of the topic, ends the demo.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		failMu sync.Mutex
		failed error
	)
	fail := func(err error) {
		failMu.Lock()
		failed = cmp.Or(failed, err)
		failMu.Unlock()
		cancel()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := prod.Run(ctx); err != nil {
			fail(fmt.Errorf("produce: %w", err))
			return
		}
		log.Info("demo producer stopped", "produced", prod.Produced())
	})
	wg.Go(func() { reportProgress(ctx, log, cs.topics, prod, started, fail) })

	printInstructions(stdout, "http://"+cs.l.Addr().String(), strings.Join(brokers, ","), reg.URL())
	serveErr := cs.serve(ctx) // stops ingest (buffered rows committed) before it returns
	cancel()
	wg.Wait()
	if st, err := cs.topics.Get(context.Background(), demo.Topic); err == nil {
		log.Info("demo stopped", "produced", prod.Produced(), "rows", st.Rows, "commits", st.Commits)
	}
	return cmp.Or(failed, serveErr)
}

// demoCluster is the in-process Kafka's cluster id, fixed so that a demo
// restarted on the same --data-dir finds its table's offsets of the same
// cluster.
const demoCluster = "tarn-demo"

// reportProgress logs a "demo progress" line whenever the topic has
// committed since the last one (checked four times a second), and ends
// the demo (fail) if the topic suspends.
func reportProgress(ctx context.Context, log *slog.Logger, mgr *topics.Manager, prod *demo.Producer, started time.Time, fail func(error)) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var commits int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		st, err := mgr.Get(ctx, demo.Topic)
		if err != nil {
			continue
		}
		if st.State == topics.StateSuspended {
			fail(fmt.Errorf("topic %s suspended: %s", demo.Topic, st.Reason))
			return
		}
		if st.Commits == commits {
			continue
		}
		if commits == 0 && st.Rows > 0 {
			log.Info("demo first rows committed", "rows", st.Rows, "since_start", time.Since(started).String())
		}
		commits = st.Commits
		produced := prod.Produced()
		log.Info("demo progress", "state", st.State, "produced", produced, "rows", st.Rows, "commits", st.Commits,
			"files", st.Files, "lag_records", produced-st.Rows, "buffered_rows", st.BufferedRows)
	}
}

// printInstructions tells how to query the live table at url, and how to
// stream another topic through the demo's Kafka (brokers, comma-separated
// host:port) and schema registry (registry, a URL).
func printInstructions(w io.Writer, url, brokers, registry string) {
	fmt.Fprintf(w, `Tarn demo: flights stream into the Iceberg table demo.flights, catalog at %[1]s
(Ctrl-C stops it: buffered rows are committed first.)

Web console (the topic, the table, its snapshots): %[1]s/ui

Its topics from the CLI: TARN_SERVER=%[1]s tarn topics list

Its Kafka and schema registry (in this process, gone when the demo stops):
  --kafka-brokers %[2]s --schema-registry-url %[3]s
Stream a topic of your own through them (from a clone of Tarn: its testdata/):
  tarn topics create orders --partitions 3 --kafka-brokers %[2]s
  tarn produce orders --schema-file testdata/orders.avsc --input testdata/orders.jsonl \
      --key-field id --count 1000 --kafka-brokers %[2]s --schema-registry-url %[3]s
  TARN_SERVER=%[1]s tarn topics enable orders --table demo.orders --target-lag-ms 1000

pyiceberg (pip install "pyiceberg[pyarrow]"):
  from pyiceberg.catalog import load_catalog
  t = load_catalog("tarn", type="rest", uri="%[1]s").load_table("demo.flights")
  print(t.scan().to_arrow().num_rows)

DuckDB (pip install duckdb==1.4.4 duckdb-ext duckdb-ext-iceberg duckdb-ext-httpfs duckdb-ext-avro;
the extensions load from those wheels, so this runs without internet access too):
  import duckdb, duckdb_ext
  con = duckdb_ext.init(duckdb.connect())
  con.execute("LOAD iceberg")
  con.execute("ATTACH 'default' AS tarn (TYPE iceberg, ENDPOINT '%[1]s', AUTHORIZATION_TYPE 'none')")
  print(con.sql("SELECT origin, count(*), avg(delay) FROM tarn.demo.flights GROUP BY origin ORDER BY 2 DESC, 1 LIMIT 5"))

Spark (iceberg-spark-runtime on the classpath):
  spark-sql \
    --conf spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions \
    --conf spark.sql.catalog.tarn=org.apache.iceberg.spark.SparkCatalog \
    --conf spark.sql.catalog.tarn.type=rest \
    --conf spark.sql.catalog.tarn.uri=%[1]s \
    -e 'SELECT count(*) FROM tarn.demo.flights'
`, url, brokers, registry)
}
