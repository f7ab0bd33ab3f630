package main_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/internal/testconnect"
	"github.com/tarnhq/tarn/internal/testkafka"
	"github.com/tarnhq/tarn/internal/testpg"
)

const (
	dbzSnapshotRows = 300
	dbzChanges      = 3000
	dbzSentinel     = 1_000_000_000
)

// sparkReader runs scripts/read-table-spark.py with scripts/setup-spark.sh's
// venv and jars.
type sparkReader struct{ python, jars string }

// setupSpark sets up (or finds cached) Spark's venv and the Iceberg Spark
// runtime jars.
func setupSpark(t *testing.T) sparkReader {
	t.Helper()
	out, err := exec.Command(filepath.Join("..", "..", "scripts", "setup-spark.sh")).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("scripts/setup-spark.sh: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err, "scripts/setup-spark.sh")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 2, "setup-spark.sh prints the python and the jars: %s", out)
	return sparkReader{python: lines[0], jars: lines[1]}
}

// rows is every row of cols of table ident as Spark reads it, sorted,
// numbers as JSON's (read-table.py's --rows form).
func (s sparkReader) rows(t *testing.T, url, ident string, cols ...string) [][]any {
	t.Helper()
	cmd := exec.Command(s.python, append([]string{filepath.Join("..", "..", "scripts", "read-table-spark.py"), url, ident}, cols...)...)
	cmd.Env = append(os.Environ(), "TARN_SPARK_JARS="+s.jars, "TARN_SPARK_RUN_DIR="+t.TempDir(), "SPARK_LOCAL_IP=127.0.0.1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "read-table-spark.py: %s", stderr.String())
	var got map[string][][]any
	require.NoError(t, json.Unmarshal(out, &got), "%.2000s", out)
	return got["spark"]
}

// dbzBig is a TOASTed body: hex of a SHA-256 chain, which pglz cannot
// shrink under the 2 kB TOAST threshold, so an update that leaves it
// alone sends Debezium's unavailable-value placeholder instead.
func dbzBig(seed int) string {
	var b strings.Builder
	h := sha256.Sum256([]byte("tarn-" + strconv.Itoa(seed)))
	for range 100 {
		b.WriteString(hex.EncodeToString(h[:]))
		h = sha256.Sum256(h[:])
	}
	return b.String()
}

// TestE2EDebezium is issue 15's "source equals table" on the real chain,
// at a small scale: a PostgreSQL table (REPLICA IDENTITY DEFAULT) with
// 300 pre-existing rows (Debezium's initial snapshot, op r), a tenth of
// them with TOASTed bodies, then 3,000 random changes — inserts, updates
// that leave the TOASTed body alone (Debezium sends its placeholder),
// body updates, deletes (each followed by a tombstone), primary-key
// changes (half of them leaving the body alone, whose TOASTed value
// must follow the row to its new key; one such change for certain at
// the end), multi-row transactions and one TRUNCATE (skipped.operations=none
// makes Debezium send it, into a topic with cleanup.policy=delete since
// a compacted one refuses its null key) — captured by Debezium's Postgres connector in
// a real Kafka Connect worker twice, with JsonConverter schemas and with
// Apicurio's AvroConverter through a real registry, on a real broker,
// materialized by `tarn serve` in mode debezium into two tables (the
// Avro one with metadata-columns; tarn killed with SIGKILL once while it
// ingests, and restarted). At the end pyiceberg, DuckDB and Spark
// (iceberg-spark-runtime, scripts/setup-spark.sh) each read exactly the
// rows of SELECT * on Postgres in each table, compared by key. Runs
// only with TARN_E2E=1.
func TestE2EDebezium(t *testing.T) {
	if os.Getenv("TARN_E2E") != "1" {
		t.Skip("set TARN_E2E=1 to run PostgreSQL → Debezium (Kafka Connect) → Kafka → tarn serve")
	}
	python := setupPython(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	pg := testpg.StartPostgres(t)
	b := testkafka.StartBroker(t)
	reg := testkafka.StartRegistry(t)
	w := testconnect.StartConnect(t, b, reg)
	t.Cleanup(func() {
		if t.Failed() {
			s, _ := w.Status(t, "dbz")
			t.Logf("connector status: %+v\nworker errors:\n%s", s, w.LogErrors(t))
		}
	})

	conn := pg.Connect(t)
	exec1 := func(sql string, args ...any) {
		t.Helper()
		_, err := conn.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	exec1(`CREATE TABLE customers (id int PRIMARY KEY, name text, v bigint, body text)`)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	var live []int // ids in the table, for the changes to pick from
	at := map[int]int{}
	add := func(id int) { at[id] = len(live); live = append(live, id) }
	drop := func(id int) {
		i := at[id]
		last := live[len(live)-1]
		live[i], at[last] = last, i
		live = live[:len(live)-1]
		delete(at, id)
	}
	body := func(i int) any {
		switch rng.IntN(10) {
		case 0:
			return dbzBig(i)
		case 1, 2, 3:
			return nil
		}
		return "short-" + strconv.Itoa(i)
	}
	next := 1
	for range dbzSnapshotRows {
		exec1(`INSERT INTO customers VALUES ($1, $2, $3, $4)`, next, "n"+strconv.Itoa(next), int64(next), body(next))
		add(next)
		next++
	}

	// The same table through two connectors: the envelope in JSON with
	// schemas, and in Avro through the registry.
	sends := testconnect.Config{
		"skipped.operations": "none",
		// A truncate event has no key, which a compacted topic
		// refuses (InvalidRecordException: "Compacted topic cannot
		// accept message without key"), failing the task.
		"topic.creation.default.cleanup.policy": "delete",
	}
	w.CreateConnector(t, "dbz", testconnect.PostgresSource(pg, "dbz", "public.customers").With(testconnect.JSONConverters(), sends))
	w.CreateConnector(t, "dbzavro", testconnect.PostgresSource(pg, "dbzavro", "public.customers").With(testconnect.AvroConverters(reg.URL), sends))
	w.AwaitStreaming(t, "dbz", 4*time.Minute)
	w.AwaitStreaming(t, "dbzavro", 4*time.Minute)
	const topic, avroTopic = "dbz.public.customers", "dbzavro.public.customers"

	data := t.TempDir()
	env := cleanEnv()
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", data, "--kafka-brokers", b.Bootstrap, "--schema-registry-url", reg.URL}
	tarn := startTarn(t, env, args...)
	mustCall(t, http.MethodPost, tarn.URL+"/management/v1/topics", map[string]any{
		"topic": topic, "table": "crm.customers", "mode": "debezium", "format": "connect-json",
		"target-lag-ms": 1000, "target-file-size-bytes": 64 << 10,
	}, http.StatusCreated)
	// The Avro topic, and its value subject, exist once the connector has
	// written its first snapshot record (AwaitStreaming may return
	// before): format auto then resolves to avro.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		code, body, err := call(ctx, http.DefaultClient, http.MethodPost, tarn.URL+"/management/v1/topics", map[string]any{
			"topic": avroTopic, "table": "crm.customers_avro", "mode": "debezium", "metadata-columns": true,
			"target-lag-ms": 1000, "target-file-size-bytes": 64 << 10,
		})
		require.NoError(t, err)
		if code == http.StatusCreated {
			break
		}
		require.True(t, code == http.StatusNotFound && time.Now().Before(deadline), "enable %s: %d %s", avroTopic, code, body)
		time.Sleep(time.Second)
	}

	// One random change, in transaction tx.
	one := func(tx pgx.Tx, i int) {
		t.Helper()
		run := func(sql string, args ...any) {
			_, err := tx.Exec(ctx, sql, args...)
			require.NoError(t, err, sql)
		}
		n := rng.IntN(100)
		switch {
		case len(live) < 50 || n < 30:
			run(`INSERT INTO customers VALUES ($1, $2, $3, $4)`, next, "n"+strconv.Itoa(next), int64(i), body(next))
			add(next)
			next++
		case n < 65: // the body (TOASTed or not) untouched
			run(`UPDATE customers SET name = $1, v = $2 WHERE id = $3`, "u"+strconv.Itoa(i), int64(i), live[rng.IntN(len(live))])
		case n < 75:
			run(`UPDATE customers SET body = $1 WHERE id = $2`, body(i), live[rng.IntN(len(live))])
		case n < 90:
			id := live[rng.IntN(len(live))]
			run(`DELETE FROM customers WHERE id = $1`, id)
			drop(id)
		default: // a primary-key change: Debezium sends a delete, a tombstone, a create
			// Half of them leave the body alone: a TOASTed one reaches
			// the new key's create as the placeholder, which takes the
			// old key's value (__debezium.oldkey).
			id := live[rng.IntN(len(live))]
			if rng.IntN(2) == 0 {
				run(`UPDATE customers SET id = $1, name = $2 WHERE id = $3`, next, "moved"+strconv.Itoa(i), id)
			} else {
				run(`UPDATE customers SET id = $1, name = $2, body = $3 WHERE id = $4`, next, "moved"+strconv.Itoa(i), body(i), id)
			}
			drop(id)
			add(next)
			next++
		}
	}
	killAt, truncateAt := dbzChanges/3, 2*dbzChanges/3
	for i := 0; i < dbzChanges; {
		if i >= killAt && killAt > 0 {
			tarn.kill(t)
			tarn = startTarn(t, env, args...)
			killAt = 0
		}
		if i >= truncateAt && truncateAt > 0 {
			exec1(`TRUNCATE customers`)
			live, at, truncateAt = nil, map[int]int{}, 0
			i++
			continue
		}
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		k := 1
		if rng.IntN(10) == 0 {
			k = 2 + rng.IntN(5) // a multi-row transaction
		}
		for range k {
			one(tx, i)
			i++
		}
		require.NoError(t, tx.Commit(ctx))
	}
	// A primary-key change of a row with a TOASTed body it leaves
	// alone, for certain (after the TRUNCATE, so the row stays), then an
	// update of the new key that leaves it alone too: the new key must
	// end with the body, never the placeholder or null.
	toasted := next
	exec1(`INSERT INTO customers VALUES ($1, 'toasted', 0, $2)`, toasted, dbzBig(toasted))
	exec1(`UPDATE customers SET id = $1, name = 'toasted-moved' WHERE id = $2`, toasted+1, toasted)
	exec1(`UPDATE customers SET name = 'toasted-moved-again' WHERE id = $1`, toasted+1)
	exec1(`INSERT INTO customers VALUES ($1, 'sentinel', 0, NULL)`, dbzSentinel)

	// The sentinel's event is the last: once Kafka has it, the topic's
	// end offset covers every change.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Bootstrap), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	sentinelKey := fmt.Sprintf(`"payload":{"id":%d}`, dbzSentinel)
	for seen := false; !seen; {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "the sentinel never reached Kafka")
		fs.EachRecord(func(r *kgo.Record) { seen = seen || strings.Contains(string(r.Key), sentinelKey) })
	}
	st := awaitTopicEnd(t, ctx, cl, tarn.URL, topic, 4*time.Minute)
	require.Empty(t, st.Errors)
	// The Avro connector runs behind or ahead of the JSON one: wait for its
	// sentinel too (its key is Avro: the id is its last bytes).
	acl, err := kgo.NewClient(kgo.SeedBrokers(b.Bootstrap), kgo.ConsumeTopics(avroTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer acl.Close()
	for seen := false; !seen; {
		fs := acl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "the sentinel never reached the Avro topic")
		fs.EachRecord(func(r *kgo.Record) {
			seen = seen || (r.Value != nil && bytes.Contains(r.Value, []byte("sentinel")))
		})
	}
	ast := awaitTopicEnd(t, ctx, acl, tarn.URL, avroTopic, 4*time.Minute)
	require.Empty(t, ast.Errors)

	// Postgres's rows, as read-table.py prints them (numbers as JSON's).
	rows, err := conn.Query(ctx, `SELECT id, name, v, body FROM customers ORDER BY id`)
	require.NoError(t, err)
	var wantRows [][]any
	for rows.Next() {
		var id int32
		var name *string
		var v *int64
		var body *string
		require.NoError(t, rows.Scan(&id, &name, &v, &body))
		r := []any{float64(id), nil, nil, nil}
		if name != nil {
			r[1] = *name
		}
		if v != nil {
			r[2] = float64(*v)
		}
		if body != nil {
			r[3] = *body
		}
		wantRows = append(wantRows, r)
	}
	require.NoError(t, rows.Err())
	var toastedBody *string
	require.NoError(t, conn.QueryRow(ctx, `SELECT body FROM customers WHERE id = $1`, toasted+1).Scan(&toastedBody))
	require.NotNil(t, toastedBody)
	require.Equal(t, dbzBig(toasted), *toastedBody, "Postgres moved the TOASTed body with its row")
	require.NotNil(t, st.Upsert)
	assert.Equal(t, int64(len(wantRows)), st.Upsert.IndexKeys, "key index keys")

	require.NotNil(t, ast.Upsert)
	assert.Equal(t, int64(len(wantRows)), ast.Upsert.IndexKeys, "key index keys (avro)")
	spark := setupSpark(t)
	for _, tbl := range []string{"crm.customers", "crm.customers_avro"} {
		// The source's primary key (Debezium's key struct) is the
		// table's identifier-field-ids, as its metadata says.
		var lt struct {
			Metadata struct {
				CurrentSchemaID int `json:"current-schema-id"`
				Schemas         []struct {
					SchemaID    int   `json:"schema-id"`
					Identifiers []int `json:"identifier-field-ids"`
					Fields      []struct {
						ID       int    `json:"id"`
						Name     string `json:"name"`
						Required bool   `json:"required"`
					} `json:"fields"`
				} `json:"schemas"`
			} `json:"metadata"`
		}
		require.NoError(t, json.Unmarshal(mustCall(t, http.MethodGet, tarn.URL+"/v1/namespaces/crm/tables/"+strings.TrimPrefix(tbl, "crm."), nil, http.StatusOK), &lt))
		var idents []string
		for _, sc := range lt.Metadata.Schemas {
			if sc.SchemaID != lt.Metadata.CurrentSchemaID {
				continue
			}
			for _, id := range sc.Identifiers {
				for _, f := range sc.Fields {
					if f.ID == id && f.Required {
						idents = append(idents, f.Name)
					}
				}
			}
		}
		assert.Equal(t, []string{"id"}, idents, "%s: identifier-field-ids (required columns)", tbl)
		got := readTableRows(t, python, tarn.URL, tbl, "id", "name", "v", "body")
		got["spark"] = spark.rows(t, tarn.URL, tbl, "id", "name", "v", "body")
		for _, engine := range []string{"pyiceberg", "duckdb", "spark"} {
			require.Len(t, got[engine], len(wantRows), "%s %s", tbl, engine)
			for i := range wantRows {
				if !assert.Equal(t, wantRows[i], got[engine][i], "%s %s row %d", tbl, engine, i) {
					break
				}
			}
		}
	}
	t.Logf("pyiceberg, DuckDB and Spark each read the %d rows of Postgres exactly, in the JSON and the Avro table, after %d snapshot rows and %d changes (truncates applied: %d)",
		len(wantRows), dbzSnapshotRows, dbzChanges, st.Upsert.Truncates)
}
