package publish

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"

	"github.com/tarnhq/tarn/catalog"
)

// maxGlueName is the longest database or table name Glue takes
// (CreateDatabase/CreateTable: Name, 1 to 255 characters).
const maxGlueName = 255

// GlueName maps a Tarn identifier to its Glue database and table.
//
// Glue stores names in lower case (for Hive) and Athena reads only
// lower-case letters, digits and '_' in database, table and column names
// (https://docs.aws.amazon.com/athena/latest/ug/tables-databases-columns-names.html).
// So each namespace level and the table name is lowered, and every other
// character ('-', '.', ' ', non-ASCII letters...) becomes '_'; the levels
// of a nested namespace are joined by '_' (sales.eu → sales_eu). Two
// Tarn tables may map to one Glue name (sales.eu.orders and sales_eu.orders):
// the second to publish finds the Glue table holding the first's
// metadata and stops with a conflict, nothing is overwritten. A name
// longer than 255 characters once mapped is refused (ErrConflict, with
// the reason: the table stays unpublished).
func GlueName(id catalog.Ident) (database, name string, err error) {
	levels := make([]string, len(id.Namespace))
	for i, l := range id.Namespace {
		levels[i] = glueSafe(l)
	}
	database, name = strings.Join(levels, "_"), glueSafe(id.Name)
	for _, n := range []string{database, name} {
		if n == "" || len(n) > maxGlueName {
			return "", "", conflictf("%s maps to the Glue name %q, which Glue refuses (1 to %d characters)", id, n, maxGlueName)
		}
	}
	return database, name, nil
}

// glueSafe lowers s and replaces every character but a-z, 0-9 and '_'
// with '_'.
func glueSafe(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// glueColumns is the Glue column list of schema: each top-level field
// with its Hive type and the parameters Apache Iceberg's own GlueCatalog
// writes (iceberg.field.id, iceberg.field.optional,
// iceberg.field.current; IcebergToGlueConverter in iceberg-aws), so that
// Athena and Glue's console show the columns. Engines read the schema
// from the metadata file, not from these.
func glueColumns(schema *iceberg.Schema) []types.Column {
	cols := make([]types.Column, 0, len(schema.Fields()))
	for _, f := range schema.Fields() {
		c := types.Column{Name: aws.String(f.Name), Type: aws.String(hiveType(f.Type)), Parameters: map[string]string{
			"iceberg.field.id":       strconv.Itoa(f.ID),
			"iceberg.field.optional": strconv.FormatBool(!f.Required),
			"iceberg.field.current":  "true",
		}}
		if f.Doc != "" {
			c.Comment = aws.String(f.Doc)
		}
		cols = append(cols, c)
	}
	return cols
}

// hiveType is the Hive type string of an Iceberg type, as Apache
// Iceberg's IcebergToGlueConverter.toTypeString writes it: time and uuid
// are strings, fixed is binary, both timestamps are timestamp; types Hive
// lacks (variant, geometry, unknown, nanosecond timestamps) are written
// as their Iceberg name.
func hiveType(t iceberg.Type) string {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return "boolean"
	case iceberg.Int32Type:
		return "int"
	case iceberg.Int64Type:
		return "bigint"
	case iceberg.Float32Type:
		return "float"
	case iceberg.Float64Type:
		return "double"
	case iceberg.DateType:
		return "date"
	case iceberg.TimeType, iceberg.StringType, iceberg.UUIDType:
		return "string"
	case iceberg.TimestampType, iceberg.TimestampTzType:
		return "timestamp"
	case iceberg.BinaryType, iceberg.FixedType:
		return "binary"
	case iceberg.DecimalType:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision(), t.Scale())
	case *iceberg.StructType:
		parts := make([]string, 0, len(t.FieldList))
		for _, f := range t.FieldList {
			parts = append(parts, f.Name+":"+hiveType(f.Type))
		}
		return "struct<" + strings.Join(parts, ",") + ">"
	case *iceberg.ListType:
		return "array<" + hiveType(t.Element) + ">"
	case *iceberg.MapType:
		return "map<" + hiveType(t.KeyType) + "," + hiveType(t.ValueType) + ">"
	}
	return t.String()
}
