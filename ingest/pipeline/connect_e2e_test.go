package pipeline_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/internal/connecttest"
	"github.com/tarnhq/tarn/internal/testpython"
	"github.com/tarnhq/tarn/internal/testserver"
)

// TestE2EConnectTypesInEngines materializes the fixture rows of every
// Kafka Connect and Debezium semantic type (testdata/connect) twice, as
// connect-json and as Avro, through pipelines on kfake into an in-process
// Tarn, then reads both tables with pyiceberg and DuckDB
// (scripts/read-rows.py): every engine must read every value as
// connecttest.Columns has it (a MicroTimestamp as the wall clock
// 2023-11-14T22:13:20.123456, a ZonedTimestamp as its instant in UTC, a
// Decimal as 1234.56, a VariableScaleDecimal as its exact text...).
// Runs only with TARN_E2E=1 (scripts/test sets it): it needs the venv of
// scripts/setup-python.sh.
func TestE2EConnectTypesInEngines(t *testing.T) {
	if os.Getenv("TARN_E2E") != "1" {
		t.Skip("set TARN_E2E=1 to read the tables with pyiceberg and DuckDB (scripts/setup-python.sh)")
	}
	python := testpython.Python(t)
	srv := testserver.Start(t)
	w := newWorld(t, "types-json", "types-avro")
	w.cat, w.wh = srv.Catalog, srv.Warehouse

	w.produce("types-json", connecttest.JSON(t, false)...)
	p, stop := w.start(w.config("types-json", pipeline.FormatConnectJSON))
	require.Empty(t, w.waitNext(p, 2).Errors)
	require.NoError(t, stop())

	ss, err := w.rc.CreateSchema(w.ctx, "types-avro-value", sr.Schema{Schema: connecttest.AvroSchema(t)})
	require.NoError(t, err)
	for _, v := range connecttest.Avro(t) {
		w.produce("types-avro", confluent(t, ss.ID, nil, v))
	}
	p, stop = w.start(w.config("types-avro", pipeline.FormatAvro))
	require.Empty(t, w.waitNext(p, 2).Errors)
	require.NoError(t, stop())

	for _, name := range []string{"types-json", "types-avro"} {
		t.Run(name, func(t *testing.T) {
			tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", name})
			require.NoError(t, err)
			want := make([]map[string]any, 2)
			for i := range want {
				want[i] = map[string]any{}
				for _, c := range connecttest.Columns {
					f, ok := tbl.Schema().FindFieldByName(c.Name)
					require.True(t, ok, c.Name)
					want[i][c.Name] = canonical(t, c.Rows[i], f.Type)
				}
			}
			got := readRows(t, python, srv.URL, "ns."+name, "id")
			for _, engine := range []string{"pyiceberg", "duckdb"} {
				rows := got[engine]
				require.Len(t, rows, 2, engine)
				for i := range rows {
					for _, c := range connecttest.Columns {
						assert.Equal(t, jsonValue(t, want[i][c.Name]), rows[i][c.Name], "%s reads %s row %d", engine, c.Name, i+1)
					}
				}
			}
		})
	}
}

// readRows runs scripts/read-rows.py: the rows of table ident as each
// engine reads them, in canonical JSON.
func readRows(t *testing.T, python, uri, ident, order string) map[string][]map[string]any {
	t.Helper()
	out, err := exec.Command(python, testpython.Script("read-rows.py"), uri, ident, order).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("read-rows.py: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var got map[string][]map[string]any
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	return got
}

// jsonValue is v as JSON decodes it (numbers float64).
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// canonical writes v, a value of Iceberg type typ as arrowtest.Value
// reads it, in scripts/read-rows.py's canonical form.
func canonical(t *testing.T, v any, typ iceberg.Type) any {
	t.Helper()
	if v == nil {
		return nil
	}
	const micros = "15:04:05.000000"
	switch v := v.(type) {
	case arrow.Date32:
		return time.Unix(int64(v)*86400, 0).UTC().Format("2006-01-02")
	case arrow.Time64:
		return time.UnixMicro(int64(v)).UTC().Format(micros)
	case arrow.Timestamp:
		s := time.UnixMicro(int64(v)).UTC().Format("2006-01-02T" + micros)
		if typ.Equals(iceberg.PrimitiveTypes.TimestampTz) {
			s += "+00:00"
		}
		return s
	case uuid.UUID:
		return v.String()
	case []byte:
		return hex.EncodeToString(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = canonical(t, e, typ.(*iceberg.ListType).Element)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			var et iceberg.Type
			switch tt := typ.(type) {
			case *iceberg.StructType:
				for _, f := range tt.FieldList {
					if f.Name == k {
						et = f.Type
					}
				}
			case *iceberg.MapType:
				et = tt.ValueType
			}
			require.NotNil(t, et, k)
			out[k] = canonical(t, e, et)
		}
		return out
	}
	return v
}
