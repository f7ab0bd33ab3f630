package jsonlit

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInt(t *testing.T) {
	tests := []struct {
		lit  string
		want int64
		err  error
	}{
		{"0", 0, nil},
		{"-0", 0, nil},
		{"-9223372036854775808", -9223372036854775808, nil},
		{"9223372036854775807", 9223372036854775807, nil},
		{"9223372036854775808", 0, strconv.ErrRange},
		{"1.0", 1, nil},
		{"-2.50e1", -25, nil},
		{"1E+2", 100, nil},
		{"120e-1", 12, nil},
		{"0.0e-999999", 0, nil},
		{"9.223372036854775807e18", 9223372036854775807, nil},
		{"9.223372036854775808e18", 0, strconv.ErrRange},
		{"1e19", 0, strconv.ErrRange},
		{"1e999999999999", 0, strconv.ErrRange},
		{"1.5", 0, ErrFraction},
		{"1e-1", 0, ErrFraction},
		{"1e-999999999999", 0, ErrFraction},
		{"1.", 0, ErrSyntax},
		{"--1", 0, ErrSyntax},
		{"1e", 0, ErrSyntax},
		{"0x10", 0, ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.lit, func(t *testing.T) {
			got, err := Int(tt.lit)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)

				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDecimal(t *testing.T) {
	tests := []struct {
		lit         string
		prec, scale int32
		want        string
		err         error
	}{
		{"0", 1, 0, "0", nil},
		{"-0.00", 3, 2, "0.00", nil},
		{"123.45", 5, 2, "123.45", nil},
		{"-123.45", 5, 2, "-123.45", nil},
		{"123.4", 5, 2, "123.40", nil},
		{"123.450", 5, 2, "123.45", nil},
		{"1.2345e2", 5, 2, "123.45", nil},
		{"12345e-2", 5, 2, "123.45", nil},
		{"99999999999999999999999999999999999999", 38, 0, "99999999999999999999999999999999999999", nil},
		{"-0.00000000000000000000000000000000000001", 38, 38, "-0.00000000000000000000000000000000000001", nil},
		{"100000000000000000000000000000000000000", 38, 0, "", ErrDigits},
		{"1234.5", 5, 2, "", ErrDigits},
		{"1e50", 38, 0, "", ErrDigits},
		{"123.456", 6, 2, "", ErrFraction},
		{"1e-3", 5, 2, "", ErrFraction},
		{"1,5", 5, 2, "", ErrSyntax},
		{"", 5, 2, "", ErrSyntax},
		{" 1", 5, 2, "", ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.lit, func(t *testing.T) {
			got, err := Decimal(tt.lit, tt.prec, tt.scale)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)

				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.ToString(tt.scale))
		})
	}
}

func TestTimeOfDay(t *testing.T) {
	for in, want := range map[string]int64{
		"00:00:00":           0,
		"23:59:59.999999":    86_399_999_999,
		"12:00:00.5":         43_200_500_000,
		"12:00:00Z":          43_200_000_000,
		"00:30:00+01:00":     84_600_000_000,
		"23:30:00-01:00":     1_800_000_000,
		"08:00:00.123456789": 28_800_123_456,
	} {
		got, err := TimeOfDay(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"24:00:00", "12:00", "12:00:60", "noon"} {
		_, err := TimeOfDay(in)
		assert.Error(t, err, in)
	}
}
