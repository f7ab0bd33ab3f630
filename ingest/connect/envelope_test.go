package connect_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/connect"
	"github.com/tarnhq/tarn/internal/arrowtest"
	"github.com/tarnhq/tarn/internal/connecttest"
)

const (
	schemaA = `{"type":"struct","fields":[{"type":"int32","optional":false,"field":"a"}],"optional":false}`
	schemaB = `{"type":"struct","fields":[{"type":"int32","optional":false,"field":"b"}],"optional":false}`
)

func TestEnvelopeSplit(t *testing.T) {
	var e connect.Envelopes
	steps := []struct {
		name         string
		value        string
		schema, pay  string
		same         bool
		malformedWhy string
	}{
		{"first", `{"schema":` + schemaA + `,"payload":{"a":1}}`, schemaA, `{"a":1}`, false, ""},
		{"repeated: compared, not scanned", `{"schema":` + schemaA + `,"payload":{"a":2}}`, schemaA, `{"a":2}`, true, ""},
		{"members the other way round", `{"payload":{"a":3},"schema":` + schemaA + `}`, schemaA, `{"a":3}`, true, ""},
		{"whitespace", " {\n \"schema\" : " + schemaA + ",\n \"payload\" : {\"a\":4} }\n", schemaA, `{"a":4}`, true, ""},
		{"another schema", `{"schema":` + schemaB + `,"payload":{"b":1}}`, schemaB, `{"b":1}`, false, ""},
		{"not JSON", `{"schema":`, "", "", false, "not JSON"},
		{"not an object", `[1]`, "", "", false, "want a JSON object"},
		{"plain JSON", `{"b":1}`, "", "", false, `member "b"`},
		{"no payload", `{"schema":` + schemaB + `}`, "", "", false, `no "payload"`},
		{"null schema", `{"schema":null,"payload":{"b":1}}`, "", "", false, "schema is null"},
		{"null payload", `{"schema":` + schemaB + `,"payload":null}`, "", "", false, "payload is null"},
		{"twice", `{"schema":` + schemaB + `,"schema":` + schemaB + `,"payload":{}}`, "", "", false, "not JSON"},
		{"trailing data", `{"schema":` + schemaA + `,"payload":{}} x`, "", "", false, "data after"},
	}
	for _, st := range steps {
		sch, payload, same, err := e.Split([]byte(st.value))
		if st.malformedWhy != "" {
			require.ErrorIs(t, err, codec.ErrMalformed, st.name)
			assert.Contains(t, err.Error(), st.malformedWhy, st.name)

			continue
		}
		require.NoError(t, err, st.name)
		assert.Equal(t, st.schema, string(sch), st.name)
		assert.Equal(t, st.pay, string(payload), st.name)
		assert.Equal(t, st.same, same, st.name)
	}
}

// TestEnvelopeFastPathRefusesWhatTheScanRefuses: when the schema text is
// the previous one, Split does not scan the value; the decoder must still
// refuse a payload that is not exactly one JSON value, so nothing the
// scan would refuse becomes a row.
func TestEnvelopeFastPathRefusesWhatTheScanRefuses(t *testing.T) {
	var e connect.Envelopes
	_, _, _, err := e.Split([]byte(`{"schema":` + schemaA + `,"payload":{"a":1}}`))
	require.NoError(t, err)
	s, err := connect.ParseSchema([]byte(schemaA))
	require.NoError(t, err)
	sc, err := connect.ToIceberg(s)
	require.NoError(t, err)
	dec, err := connect.NewDecoder(s, sc)
	require.NoError(t, err)
	rb := arrowtest.NewRecordBuilder(t, dec.ArrowSchema())
	for _, v := range []string{
		`{"schema":` + schemaA + `,"payload":{"a":1},"extra":2}`,
		`{"schema":` + schemaA + `,"payload":{"a":1},"payload":{"a":2}}`,
		`{"schema":` + schemaA + `,"payload":{"a":1}}}`,
		`{"schema":` + schemaA + `,"payload":{"a":1`,
		`{"schema":` + schemaA + `,"payload":null}`,
		`{"schema":` + schemaA + `,"payload":{"a":"\xff"}}`,
	} {
		_, payload, _, err := e.Split([]byte(v))
		if err == nil {
			err = dec.Append(rb, payload)
		}
		require.ErrorIs(t, err, codec.ErrMalformed, v)
	}
	assert.Equal(t, []int{0}, arrowtest.Lengths(rb))
}

func TestFingerprint(t *testing.T) {
	a := connect.Fingerprint([]byte(schemaA))
	assert.Equal(t, a, connect.Fingerprint([]byte(`{ "optional":false, "type":"struct",
		"fields":[{"field":"a","type":"int32","optional":false}] }`)), "canonical: whitespace and member order do not count")
	assert.NotEqual(t, a, connect.Fingerprint([]byte(schemaB)))
	assert.GreaterOrEqual(t, a, 0)
	assert.Less(t, a, 1<<31)
	for _, v := range connecttest.JSON(t, false) {
		var e connect.Envelopes
		sch, _, _, err := e.Split(v)
		require.NoError(t, err)
		// Pinned (the first 31 bits of the SHA-256 of the schema's text
		// with sorted members and no whitespace, as Python's json.dumps
		// writes it): a schema id a user put in bad-schema-ids must not
		// change between releases.
		assert.Equal(t, 612140016, connect.Fingerprint(sch))
	}
}

func BenchmarkEnvelopeSplit(b *testing.B) {
	v := connecttest.JSON(b, false)[0]
	var e connect.Envelopes
	if _, _, _, err := e.Split(v); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := e.Split(v); err != nil {
			b.Fatal(err)
		}
	}
}
