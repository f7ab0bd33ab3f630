// Package jsonlit converts the text of JSON literals exactly: number
// literals into integers and decimals without going through float64 (so a
// long or a decimal keeps every digit its producer wrote), RFC 3339 times
// of day, and base64 strings. ingest/jsonrow and ingest/connect read their
// payloads' values with it: the leaves both take alike (ReadBool,
// ReadFloat, ReadDecimal, ReadUUID, Bytes) and the walk of arrays and
// objects (ReadArray, ReadObject) are here, once.
package jsonlit

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/tarnhq/tarn/ingest/codec"
)

var (
	// ErrSyntax: the text is not a JSON number literal.
	ErrSyntax = errors.New("not a number")
	// ErrFraction: the value has more fraction digits than the target
	// scale holds (a fraction at all, for an integer).
	ErrFraction = errors.New("fraction digits beyond the column's scale")
	// ErrDigits: the value needs more digits than the target precision.
	ErrDigits = errors.New("too many digits")
)

// maxExponent bounds the exponents scaled: no value an Iceberg column holds
// needs more than 38 digits and scale 38, so an exponent beyond this only
// ever means out of range (or zero), and refusing it early keeps a hostile
// "1e999999999" from costing anything.
const maxExponent = 100

// scaledDigits returns the integer digits of the value of lit (a JSON
// number: -?int(.frac)?([eE][+-]?exp)?) multiplied by 10^scale, without
// leading zeros ("" for zero), and whether it is negative. A value with
// nonzero digits below 10^-scale is ErrFraction; more than maxDigits digits
// ErrDigits; bad syntax ErrSyntax.
func scaledDigits(lit string, scale, maxDigits int) (neg bool, digits string, err error) {
	s := lit
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	intEnd := digitRun(s)
	if intEnd == 0 {
		return false, "", ErrSyntax
	}
	intPart, s := s[:intEnd], s[intEnd:]
	var frac string
	if strings.HasPrefix(s, ".") {
		n := digitRun(s[1:])
		if n == 0 {
			return false, "", ErrSyntax
		}
		frac, s = s[1:1+n], s[1+n:]
	}
	exp := 0
	if s != "" {
		if s[0] != 'e' && s[0] != 'E' {
			return false, "", ErrSyntax
		}
		s = s[1:]
		expNeg := false
		if s != "" && (s[0] == '+' || s[0] == '-') {
			expNeg, s = s[0] == '-', s[1:]
		}
		n := digitRun(s)
		if n == 0 || n != len(s) {
			return false, "", ErrSyntax
		}
		for _, c := range s {
			exp = exp*10 + int(c-'0')
			if exp > maxExponent {
				exp = maxExponent + 1 // saturate: the result is decided below
			}
		}
		if expNeg {
			exp = -exp
		}
	}

	// value = (intPart frac) × 10^(exp - len(frac)); scaled by 10^scale.
	all := strings.TrimLeft(intPart+frac, "0")
	if all == "" {
		return neg, "", nil
	}
	shift := exp - len(frac) + scale
	if shift < 0 {
		cut := -shift
		if cut > len(all) || strings.TrimRight(all[len(all)-cut:], "0") != "" {
			return false, "", ErrFraction
		}
		all = all[:len(all)-cut]
	} else if shift > 0 {
		if len(all)+shift > maxDigits {
			return false, "", ErrDigits
		}
		all += strings.Repeat("0", shift)
	}
	if len(all) > maxDigits {
		return false, "", ErrDigits
	}

	return neg, all, nil
}

// digitRun returns the length of the run of ASCII digits at the start of s.
func digitRun(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}

	return i
}

// Int converts an integral JSON number literal ("12", "-1.0", "2e3") to
// an int64. Errors: ErrSyntax, ErrFraction, or strconv.ErrRange.
func Int(lit string) (int64, error) {
	v, err := strconv.ParseInt(lit, 10, 64)
	if err == nil || errors.Is(err, strconv.ErrRange) {
		return v, err
	}
	// Not a plain integer: a fraction or an exponent, which may still be
	// integral. 20 digits leave room for the range check below.
	neg, digits, err := scaledDigits(lit, 0, 20)
	switch {
	case errors.Is(err, ErrDigits):
		return 0, strconv.ErrRange
	case err != nil:
		return 0, err
	case digits == "":
		return 0, nil
	case neg:
		digits = "-" + digits
	}
	v, err = strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, strconv.ErrRange
	}

	return v, nil
}

// Decimal converts a JSON number literal exactly to an unscaled
// decimal128 at scale, refusing more than prec digits (prec at most 38).
// Errors: ErrSyntax, ErrFraction, ErrDigits.
func Decimal(lit string, prec, scale int32) (decimal128.Num, error) {
	neg, digits, err := scaledDigits(lit, int(scale), int(prec))
	if err != nil {
		return decimal128.Num{}, err
	}
	// At most 38 digits: two uint64 halves of at most 19 digits each.
	var n decimal128.Num
	if len(digits) > 19 {
		hi, _ := strconv.ParseUint(digits[:len(digits)-19], 10, 64)
		n = decimal128.FromU64(hi).Mul(decimal128.GetScaleMultiplier(19))
		digits = digits[len(digits)-19:]
	}
	if digits != "" {
		lo, _ := strconv.ParseUint(digits, 10, 64)
		n = n.Add(decimal128.FromU64(lo))
	}
	if neg {
		n = n.Negate()
	}

	return n, nil
}

// Integer reads v, a JSON value as encoding/json parses it with
// UseNumber, as an integer of the type named what ("an int", "a long",
// "an int8"), within [min, max]. Errors are *codec.FieldError at path
// wrapping codec.ErrMalformed when v is not a number, and
// codec.ErrOutOfRange for a fraction or a value outside the range.
func Integer(v any, min, max int64, what, path string) (int64, error) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, codec.FieldErrorf(path, codec.ErrMalformed, "want an integer, got %s", Kind(v))
	}
	i, err := Int(string(num))
	switch {
	case errors.Is(err, ErrFraction):
		return 0, codec.FieldErrorf(path, codec.ErrOutOfRange, "%s is not an integer", num)
	case err != nil || i < min || i > max:
		return 0, codec.FieldErrorf(path, codec.ErrOutOfRange, "%s overflows %s", num, what)
	}

	return i, nil
}
