package produce

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
)

// Coerce types the text cells of a CSV row by the Iceberg columns the
// schema maps to (Encoder.Columns): a cell of a numeric column becomes a
// JSON number, of a boolean column true or false, of a struct, list or
// map column the JSON value it holds; string, date, time, timestamp,
// uuid, binary and fixed cells stay text (the encoders read their text
// forms). With no columns, and for fields the columns lack, cells stay
// strings. Errors name the field and the cell.
func Coerce(row Row, columns *iceberg.Schema) error {
	if columns == nil {
		return nil
	}
	for _, f := range columns.Fields() {
		s, ok := row[f.Name].(string)
		if !ok {
			continue
		}
		v, err := coerceText(f.Type, s)
		if err != nil {
			return fmt.Errorf("field %s: %q: %w", f.Name, s, err)
		}
		row[f.Name] = v
	}
	return nil
}

func coerceText(t iceberg.Type, s string) (any, error) {
	switch t.(type) {
	case iceberg.Int32Type, iceberg.Int64Type, iceberg.Float32Type, iceberg.Float64Type, iceberg.DecimalType:
		n := strings.TrimSpace(s)
		if _, err := strconv.ParseFloat(n, 64); err != nil {
			return nil, fmt.Errorf("not a number for a %s column", t)
		}
		return json.Number(n), nil
	case iceberg.BooleanType:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("not true or false for a boolean column")
		}
		return b, nil
	case *iceberg.StructType, *iceberg.ListType, *iceberg.MapType:
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("not JSON for a %s column: %w", t, err)
		}
		return v, nil
	}
	return s, nil
}
