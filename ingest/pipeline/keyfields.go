package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/go-json-experiment/json/jsontext"
)

// keyFields is the identity of a row keyed by named value columns
// (Config.KeyFields) rather than by its Kafka key: the canonical JSON
// object of those columns, members sorted by name, integers as decimal
// text, strings as encoding/json quotes them, booleans — {"id":1} or
// {"region":"eu","id":7} sorted to {"id":7,"region":"eu"}. That is also
// the identity keyDecoder gives a Kafka key that is the same struct (a
// Debezium key, JSON or Avro), so a table's rows read the same either
// way, and the same text comes out of a value's JSON, a decoded Kafka
// key and the table's Arrow columns (Rebuild).
type keyFields struct {
	names []string // sorted
	set   map[string]bool
}

func newKeyFields(names []string) *keyFields {
	if len(names) == 0 {
		return nil
	}
	k := &keyFields{names: slices.Sorted(slices.Values(names)), set: map[string]bool{}}
	for _, n := range names {
		k.set[n] = true
	}
	return k
}

// errKeyField is a row whose key columns cannot make its key.
var errKeyField = errors.New("key-fields")

// checkKeyFields reports key columns sc cannot key by: each must be a
// top-level column of type int, long, string or boolean. With
// allowMissing, a column sc lacks passes (a connect-json table gets its
// columns with its first record; a row without it is a bad record).
func checkKeyFields(sc *iceberg.Schema, names []string, allowMissing bool) error {
	for _, n := range names {
		f, ok := sc.FindFieldByName(n)
		if !ok && allowMissing && !strings.Contains(n, ".") {
			continue
		}
		if !ok || strings.Contains(n, ".") {
			return fmt.Errorf("key-fields: %q is not a top-level column of the table", n)
		}
		switch f.Type.(type) {
		case iceberg.Int32Type, iceberg.Int64Type, iceberg.StringType, iceberg.BooleanType:
		default:
			return fmt.Errorf("key-fields: column %q is %s; key columns are int, long, string or boolean", n, f.Type)
		}
	}
	return nil
}

// encode joins the members' JSON texts (in k.names' order) into the key.
func (k *keyFields) encode(vals map[string]string) (string, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range k.names {
		v, ok := vals[n]
		if !ok {
			return "", fmt.Errorf("%w: the row has no %q", errKeyField, n)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(n)
		b.Write(name)
		b.WriteByte(':')
		b.WriteString(v)
	}
	b.WriteByte('}')
	return b.String(), nil
}

// atom is the key text of one JSON value of a key column.
func atom(name string, v jsontext.Value) (string, error) {
	switch v.Kind() {
	case '0':
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return "", fmt.Errorf("%w: %q is %s, not an integer", errKeyField, name, v)
		}
		return strconv.FormatInt(n, 10), nil
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", fmt.Errorf("%w: %q: %v", errKeyField, name, err)
		}
		b, _ := json.Marshal(s)
		return string(b), nil
	case 't', 'f':
		return string(v), nil
	case 'n':
		return "", fmt.Errorf("%w: %q is null", errKeyField, name)
	}
	return "", fmt.Errorf("%w: %q is a JSON %s; key columns are integers, strings or booleans", errKeyField, name, v.Kind())
}

// fromJSON is the key of a row given as the JSON text of an object (a
// json or connect-json payload, a Debezium after or before).
func (k *keyFields) fromJSON(row []byte) (string, error) {
	d := jsontext.NewDecoder(bytes.NewReader(row))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return "", fmt.Errorf("%w: the row is no JSON object", errKeyField)
	}
	vals := make(map[string]string, len(k.names))
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return "", fmt.Errorf("%w: %v", errKeyField, err)
		}
		name := tok.String()
		if !k.set[name] {
			if err := d.SkipValue(); err != nil {
				return "", fmt.Errorf("%w: %v", errKeyField, err)
			}
			continue
		}
		v, err := d.ReadValue()
		if err != nil {
			return "", fmt.Errorf("%w: %v", errKeyField, err)
		}
		if vals[name], err = atom(name, v); err != nil {
			return "", err
		}
	}
	return k.encode(vals)
}

// fromKey is the key of a record without a row (a tombstone) from its
// Kafka key's identity (keyDecoder): that of a JSON object holding the
// key columns, as Debezium's key struct does.
func (k *keyFields) fromKey(identity string) (string, error) {
	if !strings.HasPrefix(identity, "{") {
		return "", fmt.Errorf("%w: the record has no value, and its key %s is no object with the key columns %v", errKeyField, identity, k.names)
	}
	return k.fromJSON([]byte(identity))
}

// fromBuilder is the key of the last row appended to b (an Avro or
// Protobuf row, decoded).
func (k *keyFields) fromBuilder(b *array.RecordBuilder) (string, error) {
	vals := make(map[string]string, len(k.names))
	sc := b.Schema()
	for _, n := range k.names {
		idx := sc.FieldIndices(n)
		if len(idx) != 1 {
			return "", fmt.Errorf("%w: the table has no column %q", errKeyField, n)
		}
		col := b.Field(idx[0])
		i := col.Len() - 1
		if i < 0 || col.IsNull(i) {
			return "", fmt.Errorf("%w: %q is null", errKeyField, n)
		}
		switch c := col.(type) {
		case *array.Int32Builder:
			vals[n] = strconv.FormatInt(int64(c.Value(i)), 10)
		case *array.Int64Builder:
			vals[n] = strconv.FormatInt(c.Value(i), 10)
		case *array.StringBuilder:
			q, _ := json.Marshal(c.Value(i))
			vals[n] = string(q)
		case *array.LargeStringBuilder:
			q, _ := json.Marshal(c.Value(i))
			vals[n] = string(q)
		case *array.BooleanBuilder:
			vals[n] = strconv.FormatBool(c.Value(i))
		default:
			return "", fmt.Errorf("%w: column %q is %s", errKeyField, n, col.Type())
		}
	}
	return k.encode(vals)
}

// fromArrow is the key of row i of rec (read back from a data file).
func (k *keyFields) fromArrow(rec arrow.RecordBatch, i int) (string, error) {
	vals := make(map[string]string, len(k.names))
	sc := rec.Schema()
	for _, n := range k.names {
		idx := sc.FieldIndices(n)
		if len(idx) != 1 {
			return "", fmt.Errorf("%w: the file has no column %q", errKeyField, n)
		}
		col := rec.Column(idx[0])
		if col.IsNull(i) {
			return "", fmt.Errorf("%w: %q is null", errKeyField, n)
		}
		switch c := col.(type) {
		case *array.Int32:
			vals[n] = strconv.FormatInt(int64(c.Value(i)), 10)
		case *array.Int64:
			vals[n] = strconv.FormatInt(c.Value(i), 10)
		case *array.String:
			b, _ := json.Marshal(c.Value(i))
			vals[n] = string(b)
		case *array.LargeString:
			b, _ := json.Marshal(c.Value(i))
			vals[n] = string(b)
		case *array.Boolean:
			vals[n] = strconv.FormatBool(c.Value(i))
		default:
			return "", fmt.Errorf("%w: column %q is %s", errKeyField, n, col.DataType())
		}
	}
	return k.encode(vals)
}
