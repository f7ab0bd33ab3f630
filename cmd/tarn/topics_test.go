package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/demo"
)

// runTopics runs `tarn topics args...` against server and returns its
// stdout, stderr and exit code.
func runTopics(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(tarnBin, append([]string{"topics"}, args...)...)
	cmd.Env = env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errorsAs(err, &ee):
		code = ee.ExitCode()
	default:
		require.NoError(t, err)
	}
	return out.String(), errb.String(), code
}

func errorsAs(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*ee = e
	}
	return ok
}

// TestTopicsCLI drives `tarn topics` against a real `tarn serve` whose
// Kafka (kfake, SASL PLAIN) and registry (srfake, basic auth not needed)
// run in the test: enable → rows in the table, list and status (table and
// JSON), update, a refused resume, disable and release; errors print the
// ErrorModel message and exit 1. Then a SIGTERM commits and exits 0.
func TestTopicsCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts tarn serve")
	}
	ctx := context.Background()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", "tarn", "s3cret"))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	reg := srfake.New()
	t.Cleanup(reg.Close)
	rc, err := sr.NewClient(sr.URLs(reg.URL()))
	require.NoError(t, err)
	ss, err := rc.CreateSchema(ctx, demo.Subject, sr.Schema{Schema: demo.Schema})
	require.NoError(t, err)
	rows, err := demo.Flights()
	require.NoError(t, err)
	values, err := demo.Encode(rows[:200], ss.ID)
	require.NoError(t, err)

	// The password through the environment, the rest as flags.
	p := startTarn(t, cleanEnv("TARN_KAFKA_SASL_PASSWORD=s3cret"), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--kafka-brokers", strings.Join(kc.ListenAddrs(), ","), "--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-username", "tarn",
		"--schema-registry-url", reg.URL())
	assert.NotContains(t, p.Stderr(), "s3cret")
	env := cleanEnv("TARN_SERVER=" + p.URL)

	out, errOut, code := runTopics(t, env, "enable", demo.Topic, "--table", "air.flights", "--target-lag-ms", "1000",
		"--partition-spec", "day(_kafka.timestamp)", "--partition-spec", "identity(origin)")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "state:")
	assert.Contains(t, out, "format:")
	assert.Contains(t, out, "avro")

	prod, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.DefaultProduceTopic(demo.Topic),
		kgo.SASL(plain.Auth{User: "tarn", Pass: "s3cret"}.AsMechanism()))
	require.NoError(t, err)
	t.Cleanup(prod.Close)
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Value: v})
	}
	require.NoError(t, prod.ProduceSync(ctx, recs...).FirstErr())

	var st topics.Status
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errOut, code = runTopics(t, env, "status", demo.Topic, "-o", "json")
		require.Equal(t, 0, code, errOut)
		require.NoError(t, json.Unmarshal([]byte(out), &st), out)
		if st.Rows == 200 && st.LagRecords != nil && *st.LagRecords == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "status %+v\n%s", st, p.Stderr())
		time.Sleep(100 * time.Millisecond)
	}
	assert.Equal(t, topics.StateSyncing, st.State)
	assert.Equal(t, []string{"day(_kafka.timestamp)", "identity(origin)"}, st.Config.PartitionSpec)

	out, _, code = runTopics(t, env, "list")
	require.Equal(t, 0, code)
	assert.Regexp(t, `(?m)^TOPIC\s+TABLE\s+STATE`, out)
	assert.Regexp(t, `(?m)^flights\s+air\.flights\s+syncing\s+0\s+0\.0\s+200\s`, out)
	out, _, code = runTopics(t, env, "list", "-o", "json")
	require.Equal(t, 0, code)
	var list struct {
		Topics []topics.Status `json:"topics"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list.Topics, 1)

	out, errOut, code = runTopics(t, env, "update", demo.Topic, "--error-mode", "skip", "--target-lag-ms", "2000")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "skip")
	assert.Contains(t, out, "2000 ms")
	assert.Regexp(t, `(?m)^offsets:\s+\d=200$`, out, "all 200 in one partition (sticky partitioner)")
	assert.Regexp(t, `(?m)^start offsets:\s+0=0 1=0 2=0$`, out)
	assert.Regexp(t, `(?m)^buffered rows:\s+0$`, out)
	assert.Regexp(t, `(?m)^gaps:\s+none$`, out)

	// --partition-spec '[]' is unpartitioned, as [] is in the API (it was
	// "no column []").
	out, errOut, code = runTopics(t, env, "update", demo.Topic, "--partition-spec", "[]")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^partition spec:\s+unpartitioned$`, out)

	// Errors: the ErrorModel's message, exit 1.
	_, errOut, code = runTopics(t, env, "resume", demo.Topic)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not suspended")
	assert.Contains(t, errOut, "409 ConflictException")
	_, errOut, code = runTopics(t, env, "enable", "absent", "--table", "air.absent")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "Kafka topic absent does not exist")
	_, errOut, code = runTopics(t, env, "update", demo.Topic, "--target-lag-ms", "5")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "minimum 250")
	_, errOut, code = runTopics(t, env, "status", "nope", "--server", "http://127.0.0.1:1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "tarn server at http://127.0.0.1:1")

	// JSON format: a declared schema from a file (refused here: this
	// topic's values are Avro, but the schema reaches the server).
	schema := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(schema, []byte(`{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"x","type":"long","required":false}]}`), 0o600))
	_, errOut, code = runTopics(t, env, "enable", demo.Topic, "--table", "air.other", "--format", "avro", "--schema-file", schema)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "only for format json")

	out, _, code = runTopics(t, env, "disable", demo.Topic)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "read-only")
	out, _, code = runTopics(t, env, "status", demo.Topic)
	require.Equal(t, 0, code)
	assert.Regexp(t, `state:\s+disabled`, out)
	_, _, code = runTopics(t, env, "disable", demo.Topic, "--release")
	require.Equal(t, 0, code)
	_, errOut, code = runTopics(t, env, "status", demo.Topic)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not enabled")

	// The format json options reach the server and come back in the
	// status (this topic's Avro values are skipped as malformed JSON).
	_, errOut, code = runTopics(t, env, "update", "nope", "--timestamp-unit", "us")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not enabled")
	out, errOut, code = runTopics(t, env, "enable", demo.Topic, "--table", "air.json", "--format", "json", "--schema-file", schema,
		"--error-mode", "skip", "--timestamp-unit", "us", "--field-name-matching", "case-insensitive")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^timestamp unit:\s+us$`, out)
	assert.Regexp(t, `(?m)^field name matching:\s+case-insensitive$`, out)
	out, errOut, code = runTopics(t, env, "update", demo.Topic, "--timestamp-unit", "s", "--field-name-matching", "exact")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^timestamp unit:\s+s$`, out)
	assert.Regexp(t, `(?m)^field name matching:\s+exact$`, out)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, p.wait(t, shutdownDeadline), p.Stderr())
}

// TestServeKafkaFlagErrors: inconsistent Kafka options stop serve with
// exit 1 and a message naming the flag.
func TestServeKafkaFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--kafka-brokers", "127.0.0.1:1", "--kafka-sasl-mechanism", "GSSAPI"}, "--kafka-sasl-mechanism must be"},
		{[]string{"--kafka-brokers", "127.0.0.1:1", "--kafka-sasl-mechanism", "PLAIN"}, "needs --kafka-sasl-username"},
		{[]string{"--kafka-brokers", "127.0.0.1:1", "--kafka-tls-cert-file", "c.pem"}, "go together"},
		{[]string{"--kafka-brokers", "127.0.0.1:1", "--kafka-tls-ca-file", "/nonexistent.pem"}, "--kafka-tls-ca-file"},
		{[]string{"--schema-registry-url", "http://127.0.0.1:1"}, "need --kafka-brokers"},
	} {
		cmd := exec.Command(tarnBin, append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}, tt.args...)...)
		cmd.Env = cleanEnv()
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v: %s", tt.args, out)
		assert.Equal(t, 1, ee.ExitCode(), "%v: a refused flag exits 1: %s", tt.args, out)
		assert.Contains(t, string(out), tt.want)
	}
}
