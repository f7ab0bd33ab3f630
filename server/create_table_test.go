package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/spec"
)

// TestCreateTablePlaceholderSourceIDs pins create-table requests whose
// partition spec and write order name schema fields by the client's own
// numbering, as Spark sends them (a new table's columns numbered from 0).
// Tarn decoded both as bound table-metadata types, which refuse source-id
// 0, and answered 400 "partition source ID must be positive: 0". The
// source IDs refer to the request's schema and are resolved through it,
// with fresh table IDs assigned, as the Java reference does.
func TestCreateTablePlaceholderSourceIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.namespace(t, "spark")

	schema := func(first int) string {
		return fmt.Sprintf(`{"type":"struct","schema-id":0,"fields":[`+
			`{"id":%d,"name":"id","type":"long","required":true},`+
			`{"id":%d,"name":"data","type":"string","required":false}]}`, first, first+1)
	}
	body := func(name string, first, specSource, orderSource int, stage bool) string {
		return fmt.Sprintf(`{"name":%q,"schema":%s,`+
			`"partition-spec":{"spec-id":0,"fields":[{"source-id":%d,"field-id":1000,"name":"id_bucket","transform":"bucket[4]"}]},`+
			`"write-order":{"order-id":1,"fields":[{"source-id":%d,"transform":"identity","direction":"desc","null-order":"nulls-last"}]},`+
			`"stage-create":%t}`, name, schema(first), specSource, orderSource, stage)
	}
	tests := []struct {
		name string
		body string
	}{
		{"spark numbering from 0", body("from0", 0, 0, 1, false)},
		{"spark numbering from 0, staged", body("from0staged", 0, 0, 1, true)},
		{"numbering from 7", body("from7", 7, 7, 8, false)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodPost, prefixPath("/namespaces/spark/tables"), tt.body)
			require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
			md, err := table.ParseMetadataBytes(decodeJSON[spec.LoadTableResult](t, r).Metadata)
			require.NoError(t, err)

			assert.Equal(t, []string{"id", "data"}, fieldNames(md.CurrentSchema()))
			f, ok := md.CurrentSchema().FindFieldByName("id")
			require.True(t, ok)
			assert.Equal(t, 1, f.ID, "fresh field ids")
			sp := md.PartitionSpec()
			require.Equal(t, 1, sp.NumFields())
			assert.Equal(t, []int{1}, sp.Field(0).SourceIDs, "the spec follows the id column")
			assert.Equal(t, iceberg.BucketTransform{NumBuckets: 4}, sp.Field(0).Transform)
			so := md.SortOrder()
			require.Equal(t, 1, so.Len())
			assert.Equal(t, []int{2}, so.Field(0).SourceIDs, "the order follows the data column")
			assert.Equal(t, table.SortDESC, so.Field(0).Direction)
		})
	}
	t.Run("a source id not in the schema", func(t *testing.T) {
		r := e.do(t, http.MethodPost, prefixPath("/namespaces/spark/tables"), body("bad", 0, 5, 1, false))
		requireBadRequest(t, r)
		assert.Equal(t, http.StatusNotFound, e.do(t, http.MethodHead, tablePath([]string{"spark"}, "bad"), nil).Status)
	})
}
