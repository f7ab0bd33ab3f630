package produce

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	hamba "github.com/hamba/avro/v2"

	"github.com/tarnhq/tarn/ingest/jsonrow"
)

// errWrongType: a JSON value of a type the Avro type does not take.
var errWrongType = errors.New("wrong type")

// avroNative converts v, a JSON value, to the Go value hamba/avro
// marshals for s:
//
//   - boolean: true/false; int, long: an integral number; float, double: a
//     number; string and enum: a string (a number or boolean as its text);
//     bytes and fixed: base64; decimal: a number or a string holding one.
//   - date: "YYYY-MM-DD"; time-millis, time-micros: "HH:MM:SS[.fff]";
//     timestamp-* and local-timestamp-*: RFC 3339 or "YYYY-MM-DD
//     HH:MM:SS[.ffffff]" (no zone: UTC, or the wall clock for local-);
//     each also takes a number, the Avro value itself (days, ms or µs).
//   - record: an object; a field left out or null takes its default, or
//     null in a nullable union; a field the schema lacks is an error.
//   - array: an array; map: an object.
//   - union: null for its null branch; an object of one key naming a
//     branch (Avro's JSON encoding, {"string": "x"}); otherwise the first
//     branch the value's JSON type fits exactly, then the first that
//     takes it at all (a string "12" into long).
//
// In lenient mode a string is also read as a number or boolean (CSV
// text). Errors name the field path.
func avroNative(s hamba.Schema, v any, path string, lenient bool) (any, error) {
	if r, ok := s.(*hamba.RefSchema); ok {
		s = r.Schema()
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: "+format, append([]any{orRecord(path)}, args...)...)
	}
	switch s := s.(type) {
	case *hamba.NullSchema:
		if v != nil {
			return nil, fail("%w: want null, got %s", errWrongType, jsonrow.TypeName(v))
		}
		return nil, nil
	case *hamba.UnionSchema:
		return avroUnion(s, v, path, lenient)
	case *hamba.RecordSchema:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fail("%w: want an object for record %s, got %s", errWrongType, s.FullName(), jsonrow.TypeName(v))
		}
		out := make(map[string]any, len(s.Fields()))
		for _, f := range s.Fields() {
			fp := joinPath(path, f.Name())
			fv, present := obj[f.Name()]
			if fv == nil && f.HasDefault() {
				d, err := defaultJSON(f.Default())
				if err != nil {
					return nil, fmt.Errorf("%s: default: %w", fp, err)
				}
				fv = d
			}
			nv, err := avroNative(f.Type(), fv, fp, lenient)
			if err != nil {
				if !present {
					return nil, fmt.Errorf("%s: missing, and neither nullable nor with a default", fp)
				}
				return nil, err
			}
			out[f.Name()] = nv
		}
		for k := range obj {
			if !slices.ContainsFunc(s.Fields(), func(f *hamba.Field) bool { return f.Name() == k }) {
				return nil, fail("field %q is not in the schema of %s", k, s.FullName())
			}
		}
		return out, nil
	case *hamba.ArraySchema:
		arr, ok := v.([]any)
		if !ok {
			return nil, fail("%w: want an array, got %s", errWrongType, jsonrow.TypeName(v))
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			ne, err := avroNative(s.Items(), e, joinPath(path, strconv.Itoa(i)), lenient)
			if err != nil {
				return nil, err
			}
			out[i] = ne
		}
		return out, nil
	case *hamba.MapSchema:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fail("%w: want an object for a map, got %s", errWrongType, jsonrow.TypeName(v))
		}
		out := make(map[string]any, len(obj))
		for k, e := range obj {
			ne, err := avroNative(s.Values(), e, joinPath(path, k), lenient)
			if err != nil {
				return nil, err
			}
			out[k] = ne
		}
		return out, nil
	case *hamba.EnumSchema:
		str, ok := v.(string)
		if !ok {
			return nil, fail("%w: want a string for enum %s, got %s", errWrongType, s.FullName(), jsonrow.TypeName(v))
		}
		if !slices.Contains(s.Symbols(), str) {
			return nil, fail("%q is not a symbol of enum %s", str, s.FullName())
		}
		return str, nil
	case *hamba.FixedSchema:
		if d, ok := s.Logical().(*hamba.DecimalLogicalSchema); ok {
			return avroDecimal(d, v, fail)
		}
		b, err := base64Bytes(v, fail)
		if err != nil {
			return nil, err
		}
		if len(b) != s.Size() {
			return nil, fail("fixed %s holds %d bytes, got %d", s.FullName(), s.Size(), len(b))
		}
		arr := reflect.New(reflect.ArrayOf(s.Size(), reflect.TypeFor[byte]())).Elem()
		reflect.Copy(arr, reflect.ValueOf(b))
		return arr.Interface(), nil
	case *hamba.PrimitiveSchema:
		return avroPrimitive(s, v, fail, lenient)
	}
	return nil, fail("unsupported Avro type %s", s.Type())
}

// avroPrimitive converts v for a primitive type and its logical type.
func avroPrimitive(s *hamba.PrimitiveSchema, v any, fail func(string, ...any) error, lenient bool) (any, error) {
	var logical hamba.LogicalType
	if l := s.Logical(); l != nil {
		logical = l.Type()
	}
	num := func() (json.Number, error) {
		switch v := v.(type) {
		case json.Number:
			return v, nil
		case float64:
			return json.Number(strconv.FormatFloat(v, 'g', -1, 64)), nil
		case string:
			if lenient {
				return json.Number(strings.TrimSpace(v)), nil
			}
		}
		return "", fail("%w: want a number for %s, got %s", errWrongType, s.Type(), jsonrow.TypeName(v))
	}
	integer := func(bits int) (int64, error) {
		n, err := num()
		if err != nil {
			return 0, err
		}
		i, err := strconv.ParseInt(n.String(), 10, bits)
		if err != nil {
			f, ferr := strconv.ParseFloat(n.String(), 64)
			if ferr != nil || f != math.Trunc(f) || f < math.MinInt64 || f > math.MaxInt64 {
				return 0, fail("%s is not an integer that fits %s", n, s.Type())
			}
			i = int64(f)
			if bits == 32 && (i < math.MinInt32 || i > math.MaxInt32) {
				return 0, fail("%s does not fit int", n)
			}
		}
		return i, nil
	}
	switch s.Type() {
	case hamba.Boolean:
		switch v := v.(type) {
		case bool:
			return v, nil
		case string:
			if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil && lenient {
				return b, nil
			}
		}
		return nil, fail("%w: want true or false, got %s", errWrongType, jsonrow.TypeName(v))
	case hamba.Int:
		if str, ok := v.(string); ok && (logical == hamba.Date || logical == hamba.TimeMillis) {
			if logical == hamba.Date {
				d, err := time.Parse(time.DateOnly, str)
				if err != nil {
					return nil, fail("want a date YYYY-MM-DD: %v", err)
				}
				return int32(d.Unix() / 86400), nil
			}
			us, err := timeOfDayMicros(str)
			if err != nil {
				return nil, fail("%v", err)
			}
			return int32(us / 1000), nil
		}
		i, err := integer(32)
		return int32(i), err
	case hamba.Long:
		if str, ok := v.(string); ok && logical != "" {
			switch logical {
			case hamba.TimeMicros:
				us, err := timeOfDayMicros(str)
				if err != nil {
					return nil, fail("%v", err)
				}
				return time.Duration(us) * time.Microsecond, nil
			case hamba.TimestampMillis, hamba.TimestampMicros, hamba.LocalTimestampMillis, hamba.LocalTimestampMicros:
				t, err := parseTimestamp(str)
				if err != nil {
					return nil, fail("%v", err)
				}
				if logical == hamba.TimestampMillis || logical == hamba.LocalTimestampMillis {
					return t.UnixMilli(), nil
				}
				return t.UnixMicro(), nil
			}
		}
		i, err := integer(64)
		if err != nil {
			return nil, err
		}
		if logical == hamba.TimeMicros { // hamba takes time-micros as a time.Duration
			return time.Duration(i) * time.Microsecond, nil
		}
		return i, nil
	case hamba.Float, hamba.Double:
		n, err := num()
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(n.String(), 64)
		if err != nil {
			return nil, fail("%q is not a number", n)
		}
		if s.Type() == hamba.Float {
			return float32(f), nil
		}
		return f, nil
	case hamba.String:
		switch v := v.(type) {
		case string:
			return v, nil
		case json.Number:
			return v.String(), nil
		case bool:
			return strconv.FormatBool(v), nil
		}
		return nil, fail("%w: want a string, got %s", errWrongType, jsonrow.TypeName(v))
	case hamba.Bytes:
		if d, ok := s.Logical().(*hamba.DecimalLogicalSchema); ok {
			return avroDecimal(d, v, fail)
		}
		return base64Bytes(v, fail)
	}
	return nil, fail("unsupported Avro type %s", s.Type())
}

// avroUnion picks the branch of a union for v and wraps the value as
// hamba's map form of a union: {branch name: value}.
func avroUnion(u *hamba.UnionSchema, v any, path string, lenient bool) (any, error) {
	types := u.Types()
	if v == nil {
		if _, i := types.Get(string(hamba.Null)); i >= 0 {
			return map[string]any{string(hamba.Null): nil}, nil
		}
		return nil, fmt.Errorf("%s: null for a union without a null branch", orRecord(path))
	}
	if obj, ok := v.(map[string]any); ok && len(obj) == 1 {
		for name, inner := range obj {
			for _, b := range types {
				if unionName(b) == name || shortName(b) == name {
					nv, err := avroNative(b, inner, path, lenient)
					if err != nil {
						return nil, err
					}
					return map[string]any{unionName(b): nv}, nil
				}
			}
		}
	}
	var first error
	for _, mode := range []bool{false, true} {
		for _, b := range types {
			if b.Type() == hamba.Null || (!mode && !fitsExactly(b, v)) {
				continue
			}
			nv, err := avroNative(b, v, path, lenient)
			if err == nil {
				return map[string]any{unionName(b): nv}, nil
			}
			if first == nil {
				first = err
			}
		}
	}
	if first == nil {
		first = fmt.Errorf("%s: no branch of %s takes %s", orRecord(path), u, jsonrow.TypeName(v))
	}
	return nil, first
}

// fitsExactly reports whether v's JSON type is the one branch b is
// written from: a string for strings, enums, bytes and logical types
// with a text form; a number for numbers; and so on.
func fitsExactly(b hamba.Schema, v any) bool {
	if r, ok := b.(*hamba.RefSchema); ok {
		b = r.Schema()
	}
	switch v.(type) {
	case bool:
		return b.Type() == hamba.Boolean
	case json.Number, float64:
		switch b.Type() {
		case hamba.Int, hamba.Long, hamba.Float, hamba.Double:
			return true
		}
		return isDecimal(b)
	case string:
		switch b.Type() {
		case hamba.String, hamba.Enum, hamba.Bytes, hamba.Fixed:
			return true
		case hamba.Int, hamba.Long:
			p, ok := b.(*hamba.PrimitiveSchema)
			return ok && p.Logical() != nil
		}
	case []any:
		return b.Type() == hamba.Array
	case map[string]any:
		return b.Type() == hamba.Record || b.Type() == hamba.Map
	}
	return false
}

func isDecimal(s hamba.Schema) bool {
	if l, ok := s.(hamba.LogicalTypeSchema); ok && l.Logical() != nil {
		return l.Logical().Type() == hamba.Decimal
	}
	return false
}

// unionName is how hamba names a union branch in its map form: the full
// name of a named type, else the type with its logical type
// ("long.timestamp-millis").
func unionName(s hamba.Schema) string {
	if r, ok := s.(*hamba.RefSchema); ok {
		s = r.Schema()
	}
	if n, ok := s.(hamba.NamedSchema); ok {
		return n.FullName()
	}
	name := string(s.Type())
	if l, ok := s.(hamba.LogicalTypeSchema); ok && l.Logical() != nil {
		name += "." + string(l.Logical().Type())
	}
	return name
}

// shortName is a branch's name in Avro's JSON encoding of unions: the
// full name of a named type, the type name of a primitive.
func shortName(s hamba.Schema) string {
	if r, ok := s.(*hamba.RefSchema); ok {
		s = r.Schema()
	}
	if n, ok := s.(hamba.NamedSchema); ok {
		return n.Name()
	}
	return string(s.Type())
}

func avroDecimal(d *hamba.DecimalLogicalSchema, v any, fail func(string, ...any) error) (any, error) {
	var text string
	switch v := v.(type) {
	case json.Number:
		text = v.String()
	case string:
		text = strings.TrimSpace(v)
	case float64:
		text = strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return nil, fail("%w: want a decimal number, got %s", errWrongType, jsonrow.TypeName(v))
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return nil, fail("%q is not a decimal number", text)
	}
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale())), nil)))
	if !scaled.IsInt() {
		return nil, fail("%s has more than %d fraction digits", text, d.Scale())
	}
	if len(new(big.Int).Abs(scaled.Num()).String()) > d.Precision() {
		return nil, fail("%s has more than %d digits", text, d.Precision())
	}
	return r, nil
}

func base64Bytes(v any, fail func(string, ...any) error) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fail("%w: want a base64 string, got %s", errWrongType, jsonrow.TypeName(v))
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil {
		return nil, fail("not base64: %v", err)
	}
	return b, nil
}

// Layouts of timestamps: RFC 3339 and its space-separated, zone-less
// forms (what arrow-go writes for Parquet timestamps).
var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	time.DateOnly,
}

// parseTimestamp reads a timestamp; without a zone it is UTC (for
// local-timestamp-*: the wall clock as written).
func parseTimestamp(s string) (time.Time, error) {
	for _, l := range timestampLayouts {
		if t, err := time.Parse(l, strings.TrimSpace(s)); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a timestamp (RFC 3339, or YYYY-MM-DD HH:MM:SS[.ffffff])", s)
}

// timeOfDayMicros reads "HH:MM:SS[.fffffffff]" as microseconds since
// midnight.
func timeOfDayMicros(s string) (int64, error) {
	t, err := time.Parse("15:04:05.999999999", strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a time of day HH:MM:SS[.ffffff]", s)
	}
	return int64(t.Hour())*3_600_000_000 + int64(t.Minute())*60_000_000 + int64(t.Second())*1_000_000 + int64(t.Nanosecond()/1000), nil
}

// defaultJSON turns a field default as hamba parsed it back into a JSON
// value (numbers as json.Number).
func defaultJSON(d any) (any, error) {
	if d == nil {
		return nil, nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	err = dec.Decode(&v)
	return v, err
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func orRecord(path string) string {
	if path == "" {
		return "record"
	}
	return path
}
