package publish_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/internal/testmoto"
	"github.com/tarnhq/tarn/internal/testpython"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/publish"
	"github.com/tarnhq/tarn/spec"
)

var flightsSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "origin", Type: iceberg.PrimitiveTypes.String},
)

// TestGlueMoto publishes a table to a real Glue API (moto in server
// mode, scripts/moto.sh): created on the first commit with its database,
// updated after each append; pyiceberg's GlueCatalog pointed at moto
// loads the table and reads the same rows as pyiceberg through Tarn; a
// schema change reaches Glue's columns; a rename moves the Glue table
// and a drop removes it. (moto ignores VersionId: the conditional update
// is proven against the double, TestGlueCASRaceBetweenReadAndUpdate.)
func TestGlueMoto(t *testing.T) {
	ep := testmoto.Endpoint(t)
	t.Setenv("AWS_ACCESS_KEY_ID", testmoto.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testmoto.SecretAccessKey)
	t.Setenv("AWS_REGION", testmoto.Region)
	ctx := context.Background()
	srv := testserver.Start(t)
	id := catalog.Ident{Namespace: catalog.Namespace{"air", "eu"}, Name: "Flights"}
	require.NoError(t, srv.Catalog.CreateNamespace(ctx, catalog.Namespace{"air"}, nil))
	require.NoError(t, srv.Catalog.CreateNamespace(ctx, id.Namespace, nil))

	cfg := publish.TargetConfig{Name: "moto", Type: publish.TypeGlue, Endpoint: ep, Region: testmoto.Region}
	pub := runPublisher(t, srv, cfg)

	gc := glue.New(glue.Options{Region: testmoto.Region, BaseEndpoint: aws.String(ep),
		Credentials: credentials.NewStaticCredentialsProvider(testmoto.AccessKeyID, testmoto.SecretAccessKey, "")})
	get := func(db, name string) *types.Table {
		out, err := gc.GetTable(ctx, &glue.GetTableInput{DatabaseName: aws.String(db), Name: aws.String(name)})
		if err != nil {
			return nil
		}
		return out.Table
	}
	tio := srv.Catalog.TableIO(srv.Warehouse)
	current := func(id catalog.Ident) *table.Table {
		tbl, err := tio.LoadTable(ctx, append(table.Identifier{}, append(id.Namespace, id.Name)...))
		require.NoError(t, err)
		return tbl
	}
	waitGlue := func(db, name, loc string) *types.Table {
		t.Helper()
		var got *types.Table
		require.Eventually(t, func() bool {
			got = get(db, name)
			return got != nil && got.Parameters["metadata_location"] == loc
		}, 20*time.Second, 20*time.Millisecond, "glue %s.%s never pointed at %s: %+v", db, name, loc, pub.Status())
		return got
	}

	_, err := srv.Catalog.CreateTable(ctx, srv.Warehouse, id.Namespace, spec.CreateTableRequest{Name: id.Name, Schema: flightsSchema})
	require.NoError(t, err)
	waitGlue("air_eu", "flights", current(id).MetadataLocation())
	var prev string
	for b := range 3 {
		tbl := current(id)
		prev = tbl.MetadataLocation()
		_, err := tbl.AppendTable(ctx, flightsBatch(t, b*10, 10), 10, nil)
		require.NoError(t, err)
		got := waitGlue("air_eu", "flights", current(id).MetadataLocation())
		require.Equal(t, prev, got.Parameters["previous_metadata_location"])
		require.Equal(t, "ICEBERG", got.Parameters["table_type"])
	}

	// The reader: pyiceberg's GlueCatalog on moto and pyiceberg on Tarn.
	readsSameRows(t, current(id).MetadataLocation(), "glue", ep, "air_eu.flights", srv.URL, "air.eu.Flights")

	// Schema evolution reaches Glue's column list.
	evolved := iceberg.NewSchema(1, append(flightsSchema.Fields(),
		iceberg.NestedField{ID: 3, Name: "gate", Type: iceberg.PrimitiveTypes.Int32})...)
	_, err = srv.Catalog.CommitTable(ctx, srv.Warehouse, catalog.TableCommit{Ident: id, Updates: []table.Update{
		table.NewAddSchemaUpdate(evolved), table.NewSetCurrentSchemaUpdate(-1)}})
	require.NoError(t, err)
	got := waitGlue("air_eu", "flights", current(id).MetadataLocation())
	var cols []string
	for _, c := range got.StorageDescriptor.Columns {
		cols = append(cols, aws.ToString(c.Name)+" "+aws.ToString(c.Type))
	}
	require.Equal(t, []string{"id bigint", "origin string", "gate int"}, cols)

	// Rename, then drop.
	to := catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights2"}
	require.NoError(t, srv.Catalog.RenameTable(ctx, srv.Warehouse, id, to))
	waitGlue("air", "flights2", current(to).MetadataLocation())
	require.Eventually(t, func() bool { return get("air_eu", "flights") == nil }, 20*time.Second, 20*time.Millisecond)
	require.NoError(t, srv.Catalog.DropTable(ctx, srv.Warehouse, to, false))
	require.Eventually(t, func() bool { return get("air", "flights2") == nil }, 20*time.Second, 20*time.Millisecond)
}

// runPublisher runs a publisher of srv's tables (every one owned) to
// the one target cfg, until the test ends.
func runPublisher(t *testing.T, srv *testserver.Server, cfg publish.TargetConfig) *publish.Publisher {
	t.Helper()
	ctx := context.Background()
	target, err := publish.NewTarget(ctx, cfg)
	require.NoError(t, err)
	pub, err := publish.New([]publish.Targeted{{Config: cfg, Target: target}}, publish.Deps{
		Tables: delta.CatalogTables(srv.Catalog), Store: srv.Store, Owned: func(catalog.Ident) bool { return true }})
	require.NoError(t, err)
	srv.Catalog.AddCommitObserver(pub)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- pub.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return pub
}

// readsSameRows reads the flights table Tarn published with
// scripts/read-published.py kind target targetName (pyiceberg through the
// target) and through Tarn at tarnURI, and checks that both see the
// metadata file loc and the same 30 rows of flightsBatch(0, 30) in three
// batches.
func readsSameRows(t *testing.T, loc, kind, target, targetName, tarnURI, tarnName string) {
	t.Helper()
	t.Setenv("TARN_VENV", filepath.Join(os.Getenv("HOME"), ".cache", "tarn", "venv-glue"))
	t.Setenv("TARN_REQUIREMENTS", testpython.Script("requirements-glue.txt"))
	t.Setenv("TARN_VENV_PROBE", "import pyiceberg, boto3, pyarrow, pyiceberg.catalog.glue")
	py := testpython.Python(t)
	cmd := exec.Command(py, testpython.Script("read-published.py"), kind, target, targetName, tarnURI, tarnName, "id")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "read-published.py")
	var read struct {
		Target, Tarn struct {
			MetadataLocation string           `json:"metadata_location"`
			Rows             []map[string]any `json:"rows"`
		}
	}
	require.NoError(t, json.Unmarshal(out, &read), string(out))
	require.Equal(t, loc, read.Target.MetadataLocation)
	require.Equal(t, read.Tarn.MetadataLocation, read.Target.MetadataLocation)
	require.Len(t, read.Target.Rows, 30)
	require.Equal(t, read.Tarn.Rows, read.Target.Rows)
	require.Equal(t, map[string]any{"id": 17.0, "origin": "O7"}, read.Target.Rows[17])
}

// flightsBatch is n rows id start.. with origin "O<id mod 10>".
func flightsBatch(t *testing.T, start, n int) arrow.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(flightsSchema, nil, false, false)
	require.NoError(t, err)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := start; i < start+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("O%d", i%10))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}
