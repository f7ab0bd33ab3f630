package offsets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/offsets"
)

func TestOffsetsRoundTrip(t *testing.T) {
	o := offsets.Offsets{Cluster: "lkc-1", Topic: "orders", Next: map[int32]int64{0: 1234, 2: 7, 10: 0}}
	const js = `{"cluster":"lkc-1","topic":"orders","offsets":{"0":1234,"10":0,"2":7}}`
	assert.Equal(t, js, o.String())
	assert.Equal(t, js, o.Properties()[offsets.Property])
	got, err := offsets.Parse(js)
	require.NoError(t, err)
	assert.Equal(t, o, got)

	// No partitions yet still encodes a map, never null.
	assert.Equal(t, `{"cluster":"c","topic":"t","offsets":{}}`, offsets.Offsets{Cluster: "c", Topic: "t"}.String())
}

func TestParseRefuses(t *testing.T) {
	cases := []struct{ name, in string }{
		{"empty", ``},
		{"not an object", `[1]`},
		{"truncated", `{"cluster":"c","topic":"t","offsets":{"0":1}`},
		{"trailing data", `{"cluster":"c","topic":"t","offsets":{}} {}`},
		// Regression (issue 13 item 0): dec.More() is false before a
		// closing delimiter, so a stray "}" or "]" was accepted.
		{"trailing }", `{"cluster":"c","topic":"t","offsets":{"0":1}}}`},
		{"trailing ]", `{"cluster":"c","topic":"t","offsets":{"0":1}}]`},
		{"duplicate partition", `{"cluster":"c","topic":"t","offsets":{"0":1,"0":7}}`},
		{"duplicate field", `{"cluster":"c","topic":"t","offsets":{"0":1},"offsets":{"0":7}}`},
		{"offset beyond int64", `{"cluster":"c","topic":"t","offsets":{"0":9223372036854775808}}`},
		{"unknown field", `{"cluster":"c","topic":"t","offsets":{},"epoch":3}`},
		{"no topic", `{"cluster":"c","offsets":{"0":1}}`},
		{"no offsets", `{"cluster":"c","topic":"t"}`},
		{"null offsets", `{"cluster":"c","topic":"t","offsets":null}`},
		{"partition not a number", `{"cluster":"c","topic":"t","offsets":{"p0":1}}`},
		{"negative partition", `{"cluster":"c","topic":"t","offsets":{"-1":1}}`},
		{"negative offset", `{"cluster":"c","topic":"t","offsets":{"0":-5}}`},
		{"fractional offset", `{"cluster":"c","topic":"t","offsets":{"0":1.5}}`},
		{"partition beyond int32", `{"cluster":"c","topic":"t","offsets":{"4294967296":1}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := offsets.Parse(tc.in)
			require.ErrorIs(t, err, offsets.ErrInvalid)
		})
	}
}
