package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/source"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/server"
)

// demoTable is the table `tarn demo` materializes the flights topic into.
var demoTable = catalog.Ident{Namespace: catalog.Namespace{"demo"}, Name: "flights"}

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
	f.DurationVar(&cfg.targetLag, "target-lag", 2*time.Second, "commit buffered rows at least this often")
	cfg.serve.idempotencyKeyLifetime = server.DefaultIdempotencyKeyLifetime
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
	cs, err := openCatalog(cfg.serve)
	if err != nil {
		return err
	}
	defer cs.close()
	log := cs.log

	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic))
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

	pcfg := pipeline.Config{Topic: demo.Topic, Table: demoTable, Cluster: "tarn-demo", TargetLag: cfg.targetLag}
	user, format, err := pipeline.WriterSchema(ctx, rc, pcfg)
	if err != nil {
		return err
	}
	pcfg.Format = format
	if _, err := pipeline.EnsureTable(ctx, cs.cat, cs.wh, pcfg, user); err != nil {
		return err
	}
	brokers := kc.ListenAddrs()
	pl, err := pipeline.New(pcfg, pipeline.Deps{
		Tables:   cs.cat.TableIO(cs.wh),
		Registry: rc,
		OpenSource: func(ctx context.Context, start map[int32]int64) (pipeline.Source, error) {
			s, err := source.Open(ctx, source.Config{Brokers: brokers, Topic: demo.Topic, ControlRecords: true, Logger: log}, start)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		Logger: log,
	})
	if err != nil {
		return err
	}
	prodClient, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer prodClient.Close()
	prod := &demo.Producer{Client: prodClient, Values: values, Rate: cfg.rate, Limit: cfg.rows}

	// A failure of the producer or the pipeline ends the demo.
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
	wg.Go(func() {
		if err := pl.Run(ctx); err != nil {
			fail(fmt.Errorf("pipeline: %w", err))
		}
	})
	wg.Go(func() { reportProgress(ctx, log, pl, prod, started) })

	printInstructions(stdout, "http://"+cs.l.Addr().String())
	serveErr := cs.serve(ctx)
	cancel()
	wg.Wait()
	st := pl.Status()
	log.Info("demo stopped", "produced", prod.Produced(), "rows", st.Rows, "commits", st.Commits)
	return cmp.Or(failed, serveErr)
}

// reportProgress logs a "demo progress" line whenever the pipeline has
// committed since the last one (checked four times a second).
func reportProgress(ctx context.Context, log *slog.Logger, pl *pipeline.Pipeline, prod *demo.Producer, started time.Time) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var commits int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		st := pl.Status()
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

// printInstructions tells how to query the live table at url.
func printInstructions(w io.Writer, url string) {
	fmt.Fprintf(w, `Tarn demo: flights stream into the Iceberg table demo.flights, catalog at %[1]s
(Ctrl-C stops it: buffered rows are committed first.)

pyiceberg:
  from pyiceberg.catalog import load_catalog
  t = load_catalog("tarn", type="rest", uri="%[1]s").load_table("demo.flights")
  print(t.scan().to_arrow().num_rows)

DuckDB (iceberg extension):
  INSTALL iceberg; LOAD iceberg;
  ATTACH 'default' AS tarn (TYPE iceberg, ENDPOINT '%[1]s', AUTHORIZATION_TYPE 'none');
  SELECT origin, count(*), avg(delay) FROM tarn.demo.flights GROUP BY origin ORDER BY 2 DESC LIMIT 5;

Spark (iceberg-spark-runtime on the classpath):
  spark-sql \
    --conf spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions \
    --conf spark.sql.catalog.tarn=org.apache.iceberg.spark.SparkCatalog \
    --conf spark.sql.catalog.tarn.type=rest \
    --conf spark.sql.catalog.tarn.uri=%[1]s \
    -e 'SELECT count(*) FROM tarn.demo.flights'
`, url)
}
