package topics_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tarnhq/tarn/ingest/topics"
)

// lagJSON is the lag of a status as the API answers it.
func lagJSON(t *testing.T, st topics.Status) (records, seconds any) {
	t.Helper()
	b, err := json.Marshal(st)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	require.Contains(t, m, "lag-records")
	require.Contains(t, m, "lag-seconds")
	return m["lag-records"], m["lag-seconds"]
}

// TestResumeReportsNewState pins a bug: Resume answered the status of the
// pipeline that had suspended (state suspended, its reason), because the
// new pipeline starts in the background after Resume returns, so
// `tarn topics resume` printed "suspended" for a topic it had just
// resumed. The answer is the state after resuming: pending until the new
// pipeline reads, no reason.
func TestResumeReportsNewState(t *testing.T) {
	e := newEnv(t)
	e.enable(nil)
	e.produceRaw(0, []byte("not avro"))
	e.produceRaw(0, e.values[0])
	e.waitState(topics.StateSuspended)
	skip := "skip"
	_, err := e.m.Update(e.ctx, testTopic, topics.Patch{ErrorMode: &skip})
	require.NoError(t, err)

	st, err := e.m.Resume(e.ctx, testTopic)
	require.NoError(t, err)
	assert.Contains(t, []topics.State{topics.StatePending, topics.StateSyncing}, st.State)
	assert.Empty(t, st.Reason)
	e.waitRows(1)
	st = e.waitState(topics.StateSyncing)
	assert.EqualValues(t, 1, st.Errors["bad_header"])
}

// TestLagUnknownUntilRead pins a bug: right after enable, before the
// pipeline had fetched anything, the status said lag-seconds 0 (caught
// up) for a topic with 300 records waiting. The age of the oldest record
// not in the table is known only once a record was fetched: until then
// lag-seconds is null; lag-records, from the partitions' last stable
// offsets, is known at once. Once caught up both are 0.
func TestLagUnknownUntilRead(t *testing.T) {
	e := newEnv(t)
	e.produce(300)
	release := make(chan struct{})
	e.kafka.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.kafka.KeepControl()
		e.kafka.SleepControl(func() { <-release }) // no fetch answered until released
		return nil, nil, false
	})
	st := e.enable(nil)
	records, seconds := lagJSON(t, st)
	assert.EqualValues(t, 300, records)
	assert.Nil(t, seconds, "nothing fetched: the age of the lag is unknown")
	st, err := e.m.Get(e.ctx, testTopic)
	require.NoError(t, err)
	records, seconds = lagJSON(t, st)
	assert.EqualValues(t, 300, records)
	assert.Nil(t, seconds)

	close(release)
	e.waitRows(300)
	e.eventually("lag 0", func() bool {
		st, err := e.m.Get(e.ctx, testTopic)
		require.NoError(t, err)
		records, seconds := lagJSON(t, st)
		return records == 0.0 && seconds == 0.0
	})
}
