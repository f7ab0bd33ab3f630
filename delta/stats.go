package delta

import (
	"encoding/json"
	"math"
	"time"

	"github.com/apache/iceberg-go"
)

// fileStats is an add action's stats (PROTOCOL.md "Per-file
// Statistics"), nested by physical column names.
type fileStats struct {
	NumRecords int64          `json:"numRecords"`
	MinValues  map[string]any `json:"minValues,omitempty"`
	MaxValues  map[string]any `json:"maxValues,omitempty"`
	NullCount  map[string]any `json:"nullCount,omitempty"`
}

// statsJSON builds the stats of an Iceberg data file from the metrics its
// manifest entry carries (record count, null counts, lower and upper
// bounds, keyed by field id) for the schema's stats leaves.
//
// Bounds are kept where a Delta reader may rely on them:
//   - numbers, decimals and dates as they are (Iceberg's are exact);
//   - timestamps truncated down to milliseconds, as Delta writers store
//     them (readers widen the upper bound by 1 ms);
//   - strings as Iceberg keeps them: a truncated lower bound is a prefix
//     (still a lower bound), a truncated upper bound is incremented (still
//     an upper bound);
//   - floats only when the manifest says the file holds no NaN (Iceberg's
//     bounds leave NaN out; a reader answering max() from them would not);
//   - none for booleans, binary, uuid and fixed (Delta keeps none).
//
// Null counts are kept for every leaf that has one.
func statsJSON(df iceberg.DataFile, leaves []leaf) (string, error) {
	st := fileStats{NumRecords: df.Count()}
	lower, upper := df.LowerBoundValues(), df.UpperBoundValues()
	nulls, nans := df.NullValueCounts(), df.NaNValueCounts()
	for _, l := range leaves {
		if n, ok := nulls[l.id]; ok {
			st.NullCount = put(st.NullCount, l.physical, n)
		}
		if !boundsKept(l, nans) {
			continue
		}
		if v, ok := boundValue(l.typ, lower[l.id], false); ok {
			st.MinValues = put(st.MinValues, l.physical, v)
		}
		if v, ok := boundValue(l.typ, upper[l.id], true); ok {
			st.MaxValues = put(st.MaxValues, l.physical, v)
		}
	}
	b, err := json.Marshal(st)
	return string(b), err
}

// boundsKept reports whether a leaf's bounds go into the stats.
func boundsKept(l leaf, nans map[int]int64) bool {
	switch l.typ.(type) {
	case iceberg.BooleanType, iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType:
		return false
	case iceberg.Float32Type, iceberg.Float64Type:
		n, ok := nans[l.id]
		return ok && n == 0
	}
	return true
}

// put sets m[path...] = v, creating the nested maps.
func put(m map[string]any, path []string, v any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	cur := m
	for _, p := range path[:len(path)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	cur[path[len(path)-1]] = v
	return m
}

// Timestamp layouts of Delta stats: timestamp in UTC with a zone,
// timestamp_ntz without one, both to the millisecond.
const (
	statsTimestampLayout    = "2006-01-02T15:04:05.000Z07:00"
	statsTimestampNTZLayout = "2006-01-02T15:04:05.000"
)

// boundValue decodes an Iceberg single-value serialized bound (spec
// Appendix D) with iceberg-go and returns its Delta stats JSON value.
func boundValue(t iceberg.Type, b []byte, upper bool) (any, bool) {
	if b == nil {
		return nil, false
	}
	lit, err := iceberg.LiteralFromBytes(t, b)
	if err != nil {
		return nil, false
	}
	switch v := lit.(type) {
	case iceberg.Int32Literal:
		return int64(v), true
	case iceberg.Int64Literal:
		return int64(v), true
	case iceberg.Float32Literal:
		f := float64(v)
		return f, !math.IsInf(f, 0) && !math.IsNaN(f)
	case iceberg.Float64Literal:
		f := float64(v)
		return f, !math.IsInf(f, 0) && !math.IsNaN(f)
	case iceberg.DecimalLiteral:
		return json.Number(iceberg.Decimal(v).String()), true
	case iceberg.DateLiteral:
		return time.Unix(int64(v)*86400, 0).UTC().Format(time.DateOnly), true
	case iceberg.TimestampLiteral:
		// Truncated down to the millisecond (floor, also before 1970).
		us := int64(v)
		ms := us / 1000
		if us%1000 < 0 {
			ms--
		}
		ts := time.UnixMilli(ms).UTC()
		if _, ntz := t.(iceberg.TimestampType); ntz {
			return ts.Format(statsTimestampNTZLayout), true
		}
		return ts.Format(statsTimestampLayout), true
	case iceberg.StringLiteral:
		return string(v), true
	}
	return nil, false
}
