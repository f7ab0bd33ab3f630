package avro

import (
	"strconv"

	"github.com/apache/iceberg-go"
	hamba "github.com/hamba/avro/v2"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/connect"
)

// Properties a Kafka Connect converter writing Avro (Confluent's AvroData,
// Apicurio's, with connect.meta.data on, their default) puts on a type
// whose Connect schema has a name or parameters.
const (
	propConnectName   = "connect.name"
	propConnectParams = "connect.parameters"
)

// connectSemantic returns the Kafka Connect or Debezium semantic type
// (ingest/connect's Of) of writer schema s: the one its connect.name
// property names, with the parameters of connect.parameters, or, for a
// record without connect.name, the one its full name names (a
// converter names a struct's record by its Connect name). A
// VariableScaleDecimal record counts only with its fields scale (int) and
// value (bytes). A Decimal on bytes takes its scale from the Avro decimal
// type when there is one (the bytes are read by it), and its precision
// from connect.decimal.precision, else from the Avro type, where above 38
// (AvroData writes 64 when the Connect schema has none) it becomes 38.
//
// Errors: those of connect.Of (a Decimal without a usable scale).
func connectSemantic(s hamba.Schema, path string) (connect.Semantic, error) {
	s = deref(s)
	ps, ok := s.(interface{ Prop(string) any })
	if !ok {
		return connect.Semantic{}, nil
	}
	name, _ := ps.Prop(propConnectName).(string)
	rec, isRecord := s.(*hamba.RecordSchema)
	if name == "" && isRecord {
		name = rec.FullName()
	}
	params := map[string]string{}
	if m, ok := ps.Prop(propConnectParams).(map[string]any); ok {
		for k, v := range m {
			if str, ok := v.(string); ok {
				params[k] = str
			}
		}
	}
	base := connectType(s)
	if p, ok := s.(*hamba.PrimitiveSchema); ok && name == connect.NameDecimal && base == connect.Bytes {
		if d, ok := p.Logical().(*hamba.DecimalLogicalSchema); ok {
			prec := params[connect.ParamPrecision]
			if prec == "" {
				prec = strconv.Itoa(d.Precision())
			}

			return connect.DecimalOf(prec, d.Scale(), path)
		}
	}
	sem, err := connect.Of(name, base, params, path)
	if err == nil && sem.Kind == connect.VariableScaleDecimal && !isVariableScaleDecimal(rec) {
		sem = connect.Semantic{}
	}

	return sem, err
}

// connectType is the Kafka Connect type a converter writes as Avro type s
// ("" for Avro types no semantic type is based on).
func connectType(s hamba.Schema) connect.Type {
	switch s.Type() {
	case hamba.Int:
		return connect.Int32
	case hamba.Long:
		return connect.Int64
	case hamba.String:
		return connect.String
	case hamba.Bytes:
		return connect.Bytes
	case hamba.Record:
		return connect.Struct
	}

	return ""
}

// isVariableScaleDecimal reports whether rec has exactly the fields of
// Debezium's VariableScaleDecimal: scale (int) and value (bytes).
func isVariableScaleDecimal(rec *hamba.RecordSchema) bool {
	if rec == nil || len(rec.Fields()) != 2 {
		return false
	}
	var scale, value bool
	for _, f := range rec.Fields() {
		switch t := deref(f.Type()); {
		case f.Name() == "scale" && t.Type() == hamba.Int:
			scale = true
		case f.Name() == "value" && t.Type() == hamba.Bytes && !isDecimalBytes(t):
			value = true
		}
	}

	return scale && value
}

func isDecimalBytes(s hamba.Schema) bool {
	p, ok := s.(*hamba.PrimitiveSchema)

	return ok && p.Logical() != nil
}

// semanticFor is connectSemantic for writer schema s decoded into a
// column of type tt (nil when there is none yet), except that it is Plain
// when tt is what Tarn mapped s to before it knew Connect's and
// Debezium's names (the base type: long for a MicroTimestamp, string for
// a ZonedTimestamp or a Uuid, a struct for a VariableScaleDecimal) and
// not the semantic type: a table of an earlier build keeps decoding, and
// evolving, as before instead of suspending on a change of type Iceberg
// does not allow.
func semanticFor(s hamba.Schema, tt iceberg.Type, path string) (connect.Semantic, error) {
	sem, err := connectSemantic(s, path)
	if err != nil || sem.Kind == connect.Plain || tt == nil || codec.Promotes(sem.IcebergType(), tt) {
		return sem, err
	}
	if _, ok := deref(s).(*hamba.RecordSchema); ok {
		if _, ok := tt.(*iceberg.StructType); ok {
			return connect.Semantic{}, nil
		}

		return sem, nil
	}
	if plain, err := primitiveOf(s, path); err == nil && codec.Promotes(plain, tt) {
		return connect.Semantic{}, nil
	}

	return sem, nil
}

// leafType is the Iceberg type of non-container writer schema s (a
// primitive, enum or fixed) and its semantic type (semanticFor: tt is
// the column's type, or nil).
func leafType(s hamba.Schema, tt iceberg.Type, path string) (iceberg.Type, connect.Semantic, error) {
	sem, err := semanticFor(s, tt, path)
	if err != nil {
		return nil, sem, err
	}
	if t := sem.IcebergType(); t != nil {
		return t, sem, nil
	}
	t, err := primitiveOf(s, path)

	return t, sem, err
}
