package jsonrow_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/jsonrow"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

const moviesSchema = `{"type":"struct","fields":[
	{"id":1,"name":"Title","required":false,"type":"string"},
	{"id":2,"name":"Year","required":false,"type":"int"},
	{"id":3,"name":"Rating","required":false,"type":"double"}]}`

// TestDecodeFieldNamesExactByDefault: the declared column Title and the
// data's field title do not match unless asked; the column stays null,
// and Coverage says so instead of leaving it silent (issue 14 item 7).
func TestDecodeFieldNamesExactByDefault(t *testing.T) {
	h := newHarness(t, schema(t, moviesSchema))
	require.NoError(t, h.appendJSON(`{"title":"Heat","Year":1995}`))
	require.NoError(t, h.appendJSON(`{"title":1776,"Year":1972,"director":"Hunt"}`))
	assert.Equal(t, codec.Coverage{Rows: 2, Unfilled: []string{"Title", "Rating"}, Unmatched: []string{"director", "title"}}, h.dec.Coverage())
	rec := h.record(t)
	assert.Equal(t, []any{nil, nil}, arrowtest.Column(rec, "Title"))
	assert.Equal(t, []any{int32(1995), int32(1972)}, arrowtest.Column(rec, "Year"))
}

func TestDecodeCaseInsensitiveNames(t *testing.T) {
	h := newHarness(t, schema(t, moviesSchema), jsonrow.WithCaseInsensitiveNames())
	for _, row := range []string{
		`{"title":"Heat","YEAR":1995}`,
		`{"Title":1776,"year":1972,"rating":7.1}`,
		`{"TITLE":"Ran"}`,
	} {
		require.NoError(t, h.appendJSON(row), row)
	}
	assert.Equal(t, codec.Coverage{Rows: 3}, h.dec.Coverage())
	rec := h.record(t)
	assert.Equal(t, []any{"Heat", "1776", "Ran"}, arrowtest.Column(rec, "Title"))
	assert.Equal(t, []any{int32(1995), int32(1972), nil}, arrowtest.Column(rec, "Year"))
	assert.Equal(t, []any{nil, 7.1, nil}, arrowtest.Column(rec, "Rating"))

	// Two fields for one column: neither is dropped silently.
	for _, row := range []string{`{"Title":"a","title":"b"}`, `{"TITLE":"a","title":"b"}`} {
		err := h.appendJSON(row)
		require.ErrorIs(t, err, codec.ErrMalformed, row)
		assert.ErrorContains(t, err, `both match the column`)
		var fe *codec.FieldError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, "Title", fe.Path)
	}

	// Columns that differ only in case cannot be told apart.
	twins := `{"type":"struct","fields":[{"id":1,"name":"id","required":false,"type":"long"},
		{"id":2,"name":"s","required":false,"type":{"type":"struct","fields":[
			{"id":3,"name":"ID","required":false,"type":"long"},{"id":4,"name":"Id","required":false,"type":"long"}]}}]}`
	_, err := jsonrow.NewDecoder(schema(t, twins), jsonrow.WithCaseInsensitiveNames())
	require.ErrorIs(t, err, codec.ErrUnsupported)
	var fe *codec.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "s.Id", fe.Path)
	_, err = jsonrow.NewDecoder(schema(t, twins))
	require.NoError(t, err, "exact matching tells them apart")
}

// TestDecodeCoverage: nested columns, list elements and map values are
// covered; a parent that was never filled stands for its fields; a record
// that fails counts for nothing; a field named like a caller column is
// dropped, so it is unmatched.
func TestDecodeCoverage(t *testing.T) {
	sc := schema(t, `{"type":"struct","fields":[
		{"id":1,"name":"id","required":true,"type":"long"},
		{"id":2,"name":"addr","required":false,"type":{"type":"struct","fields":[
			{"id":3,"name":"city","required":false,"type":"string"},
			{"id":4,"name":"zip","required":false,"type":"string"}]}},
		{"id":5,"name":"legs","required":false,"type":{"type":"list","element-id":6,"element-required":true,"element":
			{"type":"struct","fields":[{"id":7,"name":"gate","required":false,"type":"string"}]}}},
		{"id":8,"name":"owner","required":false,"type":{"type":"struct","fields":[
			{"id":9,"name":"name","required":false,"type":"string"}]}},
		{"id":10,"name":"_kafka","required":false,"type":"string"}]}`)
	h := newHarness(t, sc, codec.WithCallerColumns("_kafka"))
	assert.Equal(t, codec.Coverage{}, h.dec.Coverage(), "no rows: nothing to say")

	require.NoError(t, h.appendJSON(`{"id":1,"addr":{"city":"Oslo","street":"x"},"legs":[{"gate":null,"terminal":"B"}],"_kafka":1}`))
	require.NoError(t, h.appendJSON(`{"id":2,"addr":null,"legs":[],"owner":null}`))
	// Fails on id after filling zip and owner.name and an unmatched field.
	require.Error(t, h.appendJSON(`{"addr":{"zip":"0150"},"owner":{"name":"n"},"extra":1,"id":"x"}`))
	for i := range h.rb.Schema().NumFields() {
		if h.rb.Schema().Field(i).Name != "_kafka" {
			continue
		}
		for range 2 {
			h.rb.Field(i).AppendNull()
		}
	}
	assert.Equal(t, codec.Coverage{
		Rows:      2,
		Unfilled:  []string{"addr.zip", "legs.element.gate", "owner"},
		Unmatched: []string{"_kafka", "addr.street", "legs.element.terminal"},
	}, h.dec.Coverage())
	h.record(t)
}
