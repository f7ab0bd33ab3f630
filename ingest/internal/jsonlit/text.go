package jsonlit

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tarnhq/tarn/ingest/internal/tape"
)

// Units: Iceberg stores times in microseconds.
const (
	microsPerDay    = 86_400_000_000
	microsPerSecond = 1_000_000
)

// Layouts of TimeOfDay (RFC 3339 partial-time, and full-time with its
// offset). ".999999999" makes the fraction optional.
const (
	layoutTime       = "15:04:05.999999999"
	layoutTimeOffset = "15:04:05.999999999Z07:00"
)

// TimeOfDay parses "HH:MM:SS[.fffffffff]" with an optional RFC 3339
// offset ("Z", "+01:00"; the time is then converted to UTC, modulo one
// day) into microseconds since midnight, digits below a microsecond
// truncated. Errors are time.Parse's.
func TimeOfDay(s string) (int64, error) {
	tm, err := time.Parse(layoutTime, s)
	if err != nil {
		if tm, err = time.Parse(layoutTimeOffset, s); err != nil {
			return 0, err
		}
		tm = tm.UTC()
	}
	h, m, sec := tm.Clock()
	micros := (int64(h)*3600+int64(m)*60+int64(sec))*microsPerSecond + int64(tm.Nanosecond()/1000)

	return micros % microsPerDay, nil
}

// Base64 decodes s (standard alphabet, padding optional: Jackson, which
// Kafka Connect's JsonConverter writes with, pads; other producers may
// not) into bytes taken from t's buffer (tape.Tape.Take), which the
// caller may PutBytes. Errors are encoding/base64's.
func Base64(t *tape.Tape, s string) ([]byte, error) {
	enc := base64.StdEncoding
	if len(s)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	b := t.Take(enc.DecodedLen(len(s)))
	n, err := enc.Decode(b, []byte(s))

	return b[:n], err
}

// Kind names the JSON type of a value as encoding/json parses it (with
// UseNumber), for messages: "null", "a boolean", "a number", "a string",
// "an array", "an object".
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}

	return fmt.Sprintf("%T", v)
}
