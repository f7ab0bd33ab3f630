package codec_test

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tarnhq/tarn/ingest/codec"
)

// TestDecimalFromBytes covers the two's-complement decoding of Avro
// and Kafka Connect decimals, including encodings padded beyond 16 bytes (legal: Avro puts
// no bound on the length of a bytes decimal, and fixed decimals may be
// wider than needed).
func TestDecimalFromBytes(t *testing.T) {
	big38 := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil), big.NewInt(1))
	tests := []struct {
		name string
		in   []byte
		want string // unscaled value; "" when refused
	}{
		{"zero", []byte{0}, "0"},
		{"one byte positive", []byte{0x7f}, "127"},
		{"one byte negative", []byte{0x80}, "-128"},
		{"minus one", []byte{0xff}, "-1"},
		{"two bytes", []byte{0x04, 0xd2}, "1234"},
		{"16 bytes, 38 nines", pad(big38.Bytes(), 16, 0), big38.String()},
		{"negative padded to 20 bytes", pad([]byte{0xfe}, 20, 0xff), "-2"},
		{"positive padded to 20 bytes", pad([]byte{0x01, 0x00}, 20, 0), "256"},
		{"17 bytes of magnitude", append([]byte{0x01}, make([]byte, 16)...), ""},
		{"padding that flips the sign", pad([]byte{0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 17, 0), ""},
		{"empty", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := codec.DecimalFromBytes(tt.in)
			if tt.want == "" {
				assert.False(t, ok)

				return
			}
			assert.True(t, ok)
			assert.Equal(t, tt.want, got.BigInt().String())
		})
	}
}

// pad left-pads b to n bytes with fill.
func pad(b []byte, n int, fill byte) []byte {
	return append(bytes.Repeat([]byte{fill}, n-len(b)), b...)
}
