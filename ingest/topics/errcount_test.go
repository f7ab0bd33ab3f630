package topics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/spec"
)

// TestBadRecordsCountedOnce pins a trial failure: error counters
// counted readings, not records. A pipeline whose commits fail re-reads
// its uncommitted records (re-seeking to the table's head, then again
// after each restart), and every reading of a bad record was counted:
// one bad record showed bad_header 5. Here the dead letter table is
// swapped for one the pipeline cannot write (behind the ownership
// check's back), so the topic fails and restarts over and over; the one
// bad record still counts 1, in Get and in tarn_topic_errors_total, and
// once the table is fixed it reaches the dead letter table and later
// bad records count once each.
func TestBadRecordsCountedOnce(t *testing.T) {
	e := newEnv(t)
	e.enable(func(c *topics.TopicConfig) { c.ErrorMode = "dlq" })
	e.waitRows(int64(e.produce(3)))

	swapDLQ := func(fn func()) {
		e.cat.SetOwners(nil)
		defer e.cat.SetOwners(e.m)
		fn()
	}
	swapDLQ(func() {
		require.NoError(t, e.cat.DropTable(e.ctx, e.wh, dlqIdent, true))
		_, err := e.cat.CreateTable(e.ctx, e.wh, dlqIdent.Namespace, spec.CreateTableRequest{Name: dlqIdent.Name, Schema: e.loadSchema(t)})
		require.NoError(t, err)
	})
	e.produceRaw(0, []byte("not avro"))
	e.produce(3)
	e.waitState(topics.StateFailed)
	// Long enough for the pipeline's flush retries and a restart or two
	// (backoff 1 s, then 2 s), each reading the bad record again.
	time.Sleep(4 * time.Second)
	st, err := e.m.Get(e.ctx, testTopic)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"bad_header": 1}, st.Errors)
	assert.EqualValues(t, 3, e.tableRows(), "nothing committed while the dead letter table is wrong")
	assert.EqualValues(t, 1, errorsMetric(t, e, "bad_header"))

	swapDLQ(func() { require.NoError(t, e.cat.DropTable(e.ctx, e.wh, dlqIdent, true)) })
	e.waitRows(6)
	for range 3 {
		e.produceRaw(1, []byte("still not avro"))
	}
	e.produce(3)
	e.waitRows(9)
	st = e.waitState(topics.StateSyncing)
	assert.Equal(t, map[string]int64{"bad_header": 4}, st.Errors)
	assert.EqualValues(t, 4, errorsMetric(t, e, "bad_header"))
}

// errorsMetric is tarn_topic_errors_total{kind} of the flights topic.
func errorsMetric(t *testing.T, e *env, kind string) float64 {
	t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "tarn_topic_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
