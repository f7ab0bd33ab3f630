package main_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/tarnhq/tarn/internal/demo"
)

// TestFormatsCLI: a topic enabled with `tarn topics enable --delta`
// against a real `tarn serve` (kfake, srfake) is published as a Delta
// table after its commits: `tarn formats air.flights` shows the Delta
// location, a version reflecting main's head and no lag, as text and as
// JSON; a missing table prints the ErrorModel message and exits 1.
func TestFormatsCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts tarn serve")
	}
	ctx := context.Background()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic))
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
	values, err := demo.Encode(rows[:300], ss.ID)
	require.NoError(t, err)

	p := startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--kafka-brokers", strings.Join(kc.ListenAddrs(), ","), "--schema-registry-url", reg.URL())
	env := cleanEnv("TARN_SERVER=" + p.URL)
	out, errOut, code := runTopics(t, env, "enable", demo.Topic, "--table", "air.flights", "--target-lag-ms", "1000", "--delta")
	require.Equal(t, 0, code, "%s%s", out, errOut)

	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: demo.Topic, Partition: int32(i % demo.Partitions), Value: v}
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())

	formats := func(args ...string) (string, string, int) {
		cmd := exec.Command(tarnBin, append([]string{"formats"}, args...)...)
		cmd.Env = env
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		if errorsAs(err, &ee) {
			return o.String(), e.String(), ee.ExitCode()
		}
		require.NoError(t, err)
		return o.String(), e.String(), 0
	}
	var f tableFormats
	deadline := time.Now().Add(time.Minute)
	for {
		out, errOut, code := formats("air.flights", "-o", "json")
		require.Equal(t, 0, code, "%s%s", out, errOut)
		require.NoError(t, json.Unmarshal([]byte(out), &f), out)
		if tableRows(t, p, "air", "flights") == 300 && f.Delta.SnapshotID != nil && f.Iceberg.SnapshotID != nil &&
			*f.Delta.SnapshotID == *f.Iceberg.SnapshotID && f.Delta.LagSeconds == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the Delta log does not reflect the head: %s", out)
		time.Sleep(200 * time.Millisecond)
	}
	assert.True(t, f.Delta.Enabled)
	assert.True(t, strings.HasSuffix(f.Delta.Location, "/data"), f.Delta.Location)
	assert.Empty(t, f.Delta.Error)

	out, errOut, code = formats("air.flights")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	for _, want := range []string{"delta enabled       true", "delta location      " + f.Delta.Location, "lag                 0.0s",
		"delta protocol      reader 3, writer 7 (columnMapping, timestampNtz, invariants, tarnIcebergManaged)"} {
		assert.Contains(t, out, want)
	}
	out, errOut, code = formats("air.nope")
	assert.Equal(t, 1, code, "%s", out)
	assert.Contains(t, errOut, "air.nope")
}
