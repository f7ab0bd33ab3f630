package publish

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tarnhq/tarn/delta"
)

// unityPrimitive maps a Delta primitive type (PROTOCOL.md "Primitive
// Types") to Unity's ColumnTypeName and the type's SQL text, Spark's
// catalogString (what Unity's OSS server and Databricks write in
// type_text).
var unityPrimitive = map[string][2]string{
	"boolean":       {"BOOLEAN", "boolean"},
	"byte":          {"BYTE", "tinyint"},
	"short":         {"SHORT", "smallint"},
	"integer":       {"INT", "int"},
	"long":          {"LONG", "bigint"},
	"float":         {"FLOAT", "float"},
	"double":        {"DOUBLE", "double"},
	"date":          {"DATE", "date"},
	"string":        {"STRING", "string"},
	"binary":        {"BINARY", "binary"},
	"timestamp":     {"TIMESTAMP", "timestamp"},
	"timestamp_ntz": {"TIMESTAMP_NTZ", "timestamp_ntz"},
}

// unityColumnOf is the Unity ColumnInfo of Delta column c at position
// pos: type_name, type_text, type_json (the Delta StructField, as Unity's
// clients and Spark's connector read it), precision and scale of a
// decimal.
func unityColumnOf(c delta.Column, pos int) (unityColumn, error) {
	var t any
	if err := json.Unmarshal(c.Type, &t); err != nil {
		return unityColumn{}, fmt.Errorf("unity: column %s: %w", c.Name, err)
	}
	name, text, err := unityType(t)
	if err != nil {
		return unityColumn{}, fmt.Errorf("unity: column %s: %w", c.Name, err)
	}
	field, err := json.Marshal(map[string]any{"name": c.Name, "type": c.Type, "nullable": c.Nullable, "metadata": map[string]any{}})
	if err != nil {
		return unityColumn{}, err
	}
	col := unityColumn{Name: c.Name, TypeText: text, TypeJSON: string(field), TypeName: name, Position: pos, Nullable: c.Nullable}
	var p, s int
	if n, _ := fmt.Sscanf(text, "decimal(%d,%d)", &p, &s); n == 2 {
		col.TypePrecision, col.TypeScale = &p, &s
	}
	return col, nil
}

// unityType returns the ColumnTypeName and SQL text of a Delta type (a
// decoded JSON string or object).
func unityType(t any) (name, text string, err error) {
	switch t := t.(type) {
	case string:
		if p, ok := unityPrimitive[t]; ok {
			return p[0], p[1], nil
		}
		if strings.HasPrefix(t, "decimal(") {
			return "DECIMAL", t, nil
		}
		return "", "", fmt.Errorf("Delta type %q has no Unity type", t)
	case map[string]any:
		switch t["type"] {
		case "struct":
			fs, _ := t["fields"].([]any)
			parts := make([]string, 0, len(fs))
			for _, f := range fs {
				f, _ := f.(map[string]any)
				_, ft, err := unityType(f["type"])
				if err != nil {
					return "", "", err
				}
				parts = append(parts, fmt.Sprintf("%v:%s", f["name"], ft))
			}
			return "STRUCT", "struct<" + strings.Join(parts, ",") + ">", nil
		case "array":
			_, et, err := unityType(t["elementType"])
			if err != nil {
				return "", "", err
			}
			return "ARRAY", "array<" + et + ">", nil
		case "map":
			_, kt, err := unityType(t["keyType"])
			if err != nil {
				return "", "", err
			}
			_, vt, err := unityType(t["valueType"])
			if err != nil {
				return "", "", err
			}
			return "MAP", "map<" + kt + "," + vt + ">", nil
		}
	}
	return "", "", fmt.Errorf("unknown Delta type %v", t)
}
