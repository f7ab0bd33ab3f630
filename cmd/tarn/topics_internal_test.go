package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/topics"
)

// TestPartitionSpecFlag: a single "", '""' or "[]" is unpartitioned, as
// partition-spec [] is in the API; the trial's --partition-spec '[]'
// reached the server as a field over a column named [].
func TestPartitionSpecFlag(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []string
		want []string
	}{
		{"empty", []string{""}, []string{}},
		{"blank", []string{" "}, []string{}},
		{"brackets", []string{"[]"}, []string{}},
		{"quoted empty", []string{`""`}, []string{}},
		{"one field", []string{"day(_kafka.timestamp)"}, []string{"day(_kafka.timestamp)"}},
		{"two fields", []string{"identity(origin)", "bucket(16, id)"}, []string{"identity(origin)", "bucket(16, id)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, partitionSpecFlag(tt.in))
		})
	}
}

// TestPrintStatus: the table output has every status field the trial
// missed (offsets, gaps, buffered rows, start offsets) and prints an
// empty partition spec as unpartitioned.
func TestPrintStatus(t *testing.T) {
	detected := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	st := topics.Status{
		Topic: "orders", Table: "sales.orders", State: topics.StateSyncing, BufferedRows: 7,
		Offsets: map[int32]int64{2: 30, 0: 10, 1: 20}, StartOffsets: map[int32]int64{0: 0, 1: 5, 2: 0},
		Cluster: "c1", Gaps: []topics.Gap{{Partition: 1, FirstMissingOffset: 0, LastMissingOffset: 4, Cause: "retention", Detected: detected}},
		Config: topics.TopicConfig{Format: "avro", ErrorMode: "skip", PartitionSpec: []string{}, TargetLagMs: 1000},
	}
	var b strings.Builder
	require.NoError(t, (&topicsClient{output: "table"}).printStatus(&b, st))
	out := b.String()
	for _, re := range []string{
		`(?m)^buffered rows:\s+7$`,
		`(?m)^offsets:\s+0=10 1=20 2=30$`,
		`(?m)^start offsets:\s+0=0 1=5 2=0$`,
		`(?m)^gap:\s+partition 1 offsets 0-4 \(retention, detected \S+\)$`,
		`(?m)^cluster:\s+c1$`,
		`(?m)^partition spec:\s+unpartitioned$`,
	} {
		assert.Regexp(t, re, out)
	}
	assert.NotContains(t, out, "gaps:")

	st.Gaps, st.Offsets, st.Config.PartitionSpec = nil, nil, []string{"day(_kafka.timestamp)", "identity(origin)"}
	b.Reset()
	require.NoError(t, (&topicsClient{output: "table"}).printStatus(&b, st))
	out = b.String()
	assert.Regexp(t, `(?m)^gaps:\s+none$`, out)
	assert.Regexp(t, `(?m)^offsets:\s+-$`, out)
	assert.Regexp(t, `(?m)^partition spec:\s+day\(_kafka.timestamp\), identity\(origin\)$`, out)
}

// TestPrintLag pins how `tarn topics status` and `list` print a lag:
// the trial's status said "0 records, 0.0 s" right after enable, before
// anything was read; an unknown lag is said to be unknown.
func TestPrintLag(t *testing.T) {
	n, zero, age := int64(300), 0.0, 2.25
	for _, tt := range []struct {
		name       string
		records    *int64
		seconds    *float64
		line, cols string
	}{
		{"not asked yet", nil, nil, "lag:              unknown (Kafka not asked yet)", "-\t-"},
		{"not fetched yet", &n, nil, "lag:              300 records, age unknown (not fetched yet)", "300\t-"},
		{"known", &n, &age, "lag:              300 records, 2.2 s", "300\t2.2"},
		{"caught up", new(int64), &zero, "lag:              0 records, 0.0 s", "0\t0.0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			c := &topicsClient{}
			require.NoError(t, c.printStatus(&out, topics.Status{Topic: "orders", LagRecords: tt.records, LagSeconds: tt.seconds}))
			assert.Contains(t, strings.Split(out.String(), "\n"), tt.line)
			assert.Equal(t, tt.cols, fmtLagRecords(tt.records)+"\t"+fmtLagSeconds(tt.seconds))
		})
	}
}
