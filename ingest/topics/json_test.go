package topics_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/topics"
)

// filmsSchema is a declared schema for schemaless JSON films.
const filmsSchema = `{"type":"struct","fields":[
	{"id":1,"name":"title","required":false,"type":"string"},
	{"id":2,"name":"year","required":false,"type":"int"},
	{"id":3,"name":"director","required":false,"type":"string"}]}`

// gauge reads a per-topic gauge of the manager's metrics; ok is false
// when it is not exported.
func (e *env) gauge(name string) (v float64, ok bool) {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(e.t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestJSONTopicCoverage (issue 14 item 7): a format json topic's status
// and metrics name the declared columns no record filled and the fields
// no column took, instead of leaving an all-null column silent; films
// titled by numbers are rows, not bad records; field-name-matching and
// timestamp-unit are topic options, stored with their defaults and
// changed by PATCH.
func TestJSONTopicCoverage(t *testing.T) {
	e := newEnv(t)
	st := e.enable(func(c *topics.TopicConfig) {
		c.Format, c.Schema, c.ErrorMode, c.PartitionSpec = "json", json.RawMessage(filmsSchema), "dlq", []string{}
	})
	assert.Equal(t, "ms", st.Config.TimestampUnit)
	assert.Equal(t, "exact", st.Config.FieldNameMatching)
	assert.Nil(t, st.Coverage, "nothing stored yet")
	_, ok := e.gauge("tarn_topic_unfilled_columns")
	assert.False(t, ok)

	e.produceRaw(0, []byte(`{"title": 1776, "year": 1972}`))
	e.produceRaw(0, []byte(`{"title": 2012, "year": 2009}`))
	e.produceRaw(0, []byte(`{"Title": "Heat", "Year": 1995}`))
	e.waitRows(3)
	e.eventually("coverage", func() bool {
		st, _ = e.m.Get(e.ctx, testTopic)
		return st.Coverage != nil && len(st.Coverage.UnmatchedFields) == 2
	})
	assert.Empty(t, st.Errors, "films titled by numbers are rows")
	assert.Equal(t, &topics.Coverage{UnfilledColumns: []string{"director"}, UnmatchedFields: []string{"Title", "Year"}}, st.Coverage)
	b, err := json.Marshal(st)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"coverage":{"unfilled-columns":["director"],"unmatched-fields":["Title","Year"]}`)
	for name, want := range map[string]float64{"tarn_topic_unfilled_columns": 1, "tarn_topic_unmatched_fields": 2} {
		v, ok := e.gauge(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, v, name)
	}

	ci, us := "case-insensitive", "us"
	st, err = e.m.Update(e.ctx, testTopic, topics.Patch{FieldNameMatching: &ci, TimestampUnit: &us})
	require.NoError(t, err)
	assert.Equal(t, "case-insensitive", st.Config.FieldNameMatching)
	assert.Equal(t, "us", st.Config.TimestampUnit)
	e.produceRaw(0, []byte(`{"TITLE": "Ran", "year": 1985, "Director": "Kurosawa"}`))
	e.waitRows(4)
	e.eventually("director filled", func() bool {
		st, _ = e.m.Get(e.ctx, testTopic)
		return st.Coverage != nil && len(st.Coverage.UnfilledColumns) == 0
	})
	// Fields seen unmatched since Tarn started stay listed.
	assert.Equal(t, []string{"Title", "Year"}, st.Coverage.UnmatchedFields)
	v, _ := e.gauge("tarn_topic_unfilled_columns")
	assert.Zero(t, v)

	empty := ""
	_, err = e.m.Update(e.ctx, testTopic, topics.Patch{TimestampUnit: &empty})
	require.ErrorIs(t, err, topics.ErrInvalid)
	bad := "minutes"
	_, err = e.m.Update(e.ctx, testTopic, topics.Patch{TimestampUnit: &bad})
	require.ErrorIs(t, err, topics.ErrInvalid)
}

// TestPatchJSONOptionsRefusedForAvro: timestamp-unit and
// field-name-matching belong to format json; an Avro topic's schema says
// both.
func TestPatchJSONOptionsRefusedForAvro(t *testing.T) {
	e := newEnv(t)
	st := e.enable(nil)
	assert.Empty(t, st.Config.TimestampUnit)
	assert.Empty(t, st.Config.FieldNameMatching)
	us, ci := "us", "case-insensitive"
	_, err := e.m.Update(e.ctx, testTopic, topics.Patch{TimestampUnit: &us})
	require.ErrorIs(t, err, topics.ErrInvalid)
	assert.ErrorContains(t, err, "timestamp-unit is for format json only")
	_, err = e.m.Update(e.ctx, testTopic, topics.Patch{FieldNameMatching: &ci})
	require.ErrorIs(t, err, topics.ErrInvalid)
}
