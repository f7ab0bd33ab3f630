package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	hamba "github.com/hamba/avro/v2"

	"github.com/tarnhq/tarn/bench/internal/harness"
	"github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/internal/demo"
)

// kafkaConnect runs Kafka Connect standalone with Apache Iceberg's sink
// on the topic, writing into bench.flights_kc of the Tarn catalog at
// catalogURI, until the table's current snapshot counts n records. The
// worker starts with no connector; CPU and wall are taken from the POST
// that creates the connector (so JVM start-up is not counted, its JIT
// warm-up is) to the snapshot holding every row.
func kafkaConnect(ctx context.Context, catalogURI, bootstrap, dir string, n int64, o options) (*side, error) {
	out, err := exec.CommandContext(ctx, "bench/kafkaconnect/setup.sh").Output()
	if err != nil {
		return nil, fmt.Errorf("bench/kafkaconnect/setup.sh: %w", err)
	}
	lib := strings.TrimSpace(string(out))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}

	// The target table: the flights columns, unpartitioned (the sink
	// writes only the value's fields; Tarn's table also has _kafka).
	writer, err := hamba.Parse(demo.Schema)
	if err != nil {
		return nil, err
	}
	user, err := avro.ToIceberg(writer)
	if err != nil {
		return nil, err
	}
	cat, err := rest.NewCatalog(ctx, "tarn", catalogURI)
	if err != nil {
		return nil, err
	}
	ident := table.Identifier{"bench", "flights_kc"}
	if _, err := cat.CreateTable(ctx, ident, user); err != nil {
		return nil, fmt.Errorf("create %v: %w", ident, err)
	}

	addr, err := harness.FreeAddr()
	if err != nil {
		return nil, err
	}
	worker := filepath.Join(dir, "worker.properties")
	if err := os.WriteFile(worker, []byte(strings.Join([]string{
		"bootstrap.servers=" + bootstrap,
		"key.converter=org.apache.kafka.connect.converters.ByteArrayConverter",
		"value.converter=org.apache.kafka.connect.converters.ByteArrayConverter",
		"offset.storage.file.filename=" + filepath.Join(dir, "offsets"),
		"listeners=http://" + addr,
		"plugin.discovery=only_scan",
		// A sink task handles the Iceberg coordinator's START_COMMIT only in
		// put(), and an idle task's poll blocks until the next offset flush
		// (default 60 s): once the topic is drained the last commit would
		// time out (iceberg.control.commit.timeout-ms, 30 s) and retry a
		// minute later. 1 s keeps put() coming.
		"offset.flush.interval.ms=1000",
		"",
	}, "\n")), 0o644); err != nil {
		return nil, err
	}
	log4j := filepath.Join(dir, "log4j2.properties")
	if err := os.WriteFile(log4j, []byte(strings.Join([]string{
		"status = warn",
		"appender.file.type = File",
		"appender.file.name = file",
		"appender.file.fileName = " + filepath.Join(dir, "connect.log"),
		"appender.file.layout.type = PatternLayout",
		"appender.file.layout.pattern = [%d] %p %m (%c)%n",
		"rootLogger.level = INFO",
		"rootLogger.appenderRef.file.ref = file",
		"",
	}, "\n")), 0o644); err != nil {
		return nil, err
	}
	java := "java"
	if h := os.Getenv("JAVA_HOME"); h != "" {
		java = filepath.Join(h, "bin", "java")
	}
	cmd := exec.CommandContext(ctx, java, "-Xms256m", "-Xmx1g", "-XX:+UseG1GC",
		"-Dlog4j2.configurationFile="+log4j, "-cp", lib+"/*",
		"org.apache.kafka.connect.cli.ConnectStandalone", worker)
	logf, err := os.Create(filepath.Join(dir, "connect.out"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	base := "http://" + addr
	if err := harness.WaitHTTP(ctx, base+"/connectors", 2*time.Minute); err != nil {
		return nil, fmt.Errorf("worker: %w (log %s)", err, dir)
	}
	pid := cmd.Process.Pid

	cfg := map[string]string{
		"connector.class":                     "org.apache.iceberg.connect.IcebergSinkConnector",
		"tasks.max":                           strconv.Itoa(o.kcTasks),
		"topics":                              topic,
		"key.converter":                       "org.apache.kafka.connect.converters.ByteArrayConverter",
		"value.converter":                     "tarn.bench.WireAvroConverter",
		"value.converter.schema":              demo.Schema,
		"iceberg.tables":                      strings.Join(ident, "."),
		"iceberg.tables.auto-create-enabled":  "false",
		"iceberg.catalog.type":                "rest",
		"iceberg.catalog.uri":                 catalogURI,
		"iceberg.control.topic":               "control-iceberg",
		"iceberg.control.commit.interval-ms":  strconv.FormatInt(o.lagMs, 10),
		"consumer.override.auto.offset.reset": "earliest",
	}
	body, _ := json.Marshal(map[string]any{"name": "iceberg-bench", "config": cfg})
	cpu0, err := harness.CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	resp, err := http.Post(base+"/connectors", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("create connector: %s: %s", resp.Status, msg)
	}
	var rows, commits int64
	lastLog := time.Now()
	for {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return nil, err
		}
		if s := tbl.CurrentSnapshot(); s != nil && s.Summary != nil {
			rows, _ = strconv.ParseInt(s.Summary.Properties["total-records"], 10, 64)
			commits = int64(len(tbl.Metadata().Snapshots()))
		}
		if rows >= n {
			break
		}
		if time.Since(t0) > o.kcTimeout {
			return nil, fmt.Errorf("only %d of %d rows committed after %v (log %s)", rows, n, o.kcTimeout,
				filepath.Join(dir, "connect.log"))
		}
		if time.Since(lastLog) > 10*time.Second {
			lastLog = time.Now()
			log.Printf("kafka connect: %d rows committed after %.0f s", rows, time.Since(t0).Seconds())
			if err := connectorFailed(base); err != nil {
				return nil, err
			}
		}
		time.Sleep(200 * time.Millisecond)
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
	return &side{Name: "kafka-connect", Rows: rows, WallS: wall, CPUS: cpu1 - cpu0, PeakRSSBytes: rss, Commits: commits,
		Note: fmt.Sprintf("Kafka Connect standalone 4.4.0 + iceberg-kafka-connect 1.11.0, tasks.max %d, "+
			"commit interval %d ms, JVM -Xmx1g; create connector → every row in a snapshot", o.kcTasks, o.lagMs)}, nil
}

// connectorFailed returns the first "Caused by" line of a failed
// connector or task, nil while all run.
func connectorFailed(base string) error {
	resp, err := http.Get(base + "/connectors/iceberg-bench/status")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var st struct {
		Connector struct {
			State string `json:"state"`
			Trace string `json:"trace"`
		} `json:"connector"`
		Tasks []struct {
			State string `json:"state"`
			Trace string `json:"trace"`
		} `json:"tasks"`
	}
	if json.NewDecoder(resp.Body).Decode(&st) != nil {
		return nil
	}
	traces := []string{}
	if st.Connector.State == "FAILED" {
		traces = append(traces, st.Connector.Trace)
	}
	for _, t := range st.Tasks {
		if t.State == "FAILED" {
			traces = append(traces, t.Trace)
		}
	}
	if len(traces) == 0 {
		return nil
	}
	cause := strings.SplitN(traces[0], "\n", 2)[0]
	for line := range strings.SplitSeq(traces[0], "\n") {
		if strings.HasPrefix(line, "Caused by:") {
			cause = line
		}
	}
	return fmt.Errorf("kafka connect: %d failed (connector or task): %s", len(traces), cause)
}
