package strictjson_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/strictjson"
)

func TestValidAccepts(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `1`, `"s"`, `null`, `true`,
		" \n\t{\"a\":1} \n",
		`{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}`, // one name in different objects
		`{"a":1,"A":2}`,                             // names compare exactly
		`{"n":-9223372036854775808,"m":9223372036854775807,"f":1.5e308,"g":1e-400,"h":-0}`,
		`{"":1,"\u0061b":2,"x":[[],[[]],{}]}`,
	} {
		assert.NoError(t, strictjson.Valid([]byte(in)), in)
	}
}

func TestValidRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ in, msg string }{
		"empty":                 {``, "no JSON value"},
		"only space":            {"  \n", "no JSON value"},
		"trailing }":            {`{"a":1}}`, "data after the JSON value at offset 7"},
		"trailing ]":            {`{"a":[1]}]`, "data after the JSON value"},
		"nested trailing }":     {`{"a":{"b":1}}}`, "data after the JSON value"},
		"second value":          {`{"a":1} {"a":2}`, "data after the JSON value"},
		"second scalar":         {`1 2`, "data after the JSON value"},
		"trailing garbage":      {`{"a":1}x`, "data after the JSON value"},
		"truncated":             {`{"a":1`, "unexpected EOF"},
		"duplicate name":        {`{"a":1,"a":2}`, `duplicate object member name "a"`},
		"duplicate nested":      {`{"x":[{"k":1,"b":2,"k":3}]}`, `duplicate object member name "k"`},
		"duplicate by escape":   {`{"ab":1,"\u0061b":2}`, `duplicate object member name "ab"`},
		"duplicate after value": {`{"a":{"b":[1,{"c":2}]},"a":null}`, `duplicate object member name "a"`},
		"integer beyond int64":  {`{"a":9223372036854775808}`, "an integer of 19 digits does not fit in 64 bits"},
		"negative beyond int64": {`[-9223372036854775809]`, "does not fit in 64 bits"},
		"float overflow":        {`{"a":1e999}`, "beyond the range of a 64-bit float (offset 5)"},
		"invalid UTF-8":         {"{\"a\":\"\xff\"}", "invalid UTF-8"},
		"too deep":              {strings.Repeat("[", strictjson.MaxDepth+1) + strings.Repeat("]", strictjson.MaxDepth+1), "exceeded max depth"},
	} {
		t.Run(name, func(t *testing.T) {
			err := strictjson.Valid([]byte(tc.in))
			require.ErrorIs(t, err, strictjson.ErrInvalid)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestDecode(t *testing.T) {
	type v struct {
		A int64  `json:"a"`
		B string `json:"b"`
	}
	var got v
	require.NoError(t, strictjson.Decode([]byte(`{"a":1,"b":"x","c":true}`), &got))
	assert.Equal(t, v{A: 1, B: "x"}, got)
	require.ErrorIs(t, strictjson.Decode([]byte(`{"a":1}}`), &got), strictjson.ErrInvalid)

	// A type error is encoding/json's, not ErrInvalid.
	err := strictjson.Decode([]byte(`{"a":"1"}`), &got)
	var te *json.UnmarshalTypeError
	require.ErrorAs(t, err, &te)

	err = strictjson.DecodeKnown([]byte(`{"a":1,"c":true}`), &got)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown field "c"`)
	require.NoError(t, strictjson.DecodeKnown([]byte(` {"a":2} `), &got))
	assert.Equal(t, int64(2), got.A)
	require.ErrorIs(t, strictjson.DecodeKnown([]byte(`{"a":1} {}`), &got), strictjson.ErrInvalid)
}

func TestCanonical(t *testing.T) {
	a, err := strictjson.Canonical([]byte(`{ "b" : [1, 2.50, {"y":null,"x":"\u0041"}], "a":true }`))
	require.NoError(t, err)
	assert.Equal(t, `{"a":true,"b":[1,2.50,{"x":"A","y":null}]}`, string(a))
	b, err := strictjson.Canonical([]byte(`{"a":true,"b":[1,2.50,{"x":"A","y":null}]}`))
	require.NoError(t, err)
	assert.Equal(t, a, b)
	_, err = strictjson.Canonical([]byte(`{"a":1,"a":1}`))
	require.ErrorIs(t, err, strictjson.ErrInvalid)
}

// BenchmarkValid measures the strict check on a table-commit-sized body
// (a schema of 2,000 columns, about 150 KB): the cost every request with
// a body pays before its handler.
func BenchmarkValid(b *testing.B) {
	data := benchBody()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := strictjson.Valid(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodingJSONValid is the floor: encoding/json's syntax check
// alone on BenchmarkValid's body.
func BenchmarkEncodingJSONValid(b *testing.B) {
	data := benchBody()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if !json.Valid(data) {
			b.Fatal("invalid")
		}
	}
}

func benchBody() []byte {
	var sb strings.Builder
	sb.WriteString(`{"requirements":[],"updates":[{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[`)
	for i := range 2000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"id":` + strings.Repeat("1", 1+i%6) + `,"name":"column_number_` + strings.Repeat("x", i%10) + `","required":false,"type":"string","doc":"a column"}`)
	}
	sb.WriteString(`]}}]}`)
	return []byte(sb.String())
}
