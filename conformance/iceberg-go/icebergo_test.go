//go:build integration

// Package icebergo holds a running Tarn against iceberg-go's REST client
// (github.com/apache/iceberg-go/catalog/rest), the version pinned in go.mod:
// iceberg-go's shared catalog suite (catalog/catalogtest), then table writes
// and reads of real data (testdata/flights-10k.parquet, two appends, totals
// from testdata/answers.json, time travel, a row filter, schema evolution
// through the transaction API) and a view's create, load and drop.
//
// It talks to the server named by TARN_URI (conformance/run starts one) and
// writes data files into that server's warehouse (TARN_WAREHOUSE, a file://
// URI the tests also check locations against). Without TARN_URI every test
// fails rather than skips, so a runner that forgot the server cannot report
// green. Run it with conformance/iceberg-go/run.sh, or:
//
//	TARN_URI=http://127.0.0.1:8181 TARN_WAREHOUSE=file:///path/to/warehouse \
//	  go test -tags integration -count=1 ./conformance/iceberg-go/
package icebergo

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/catalogtest"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// firstAppend is the number of flights in the first append; the second adds
// the rest of the file.
const firstAppend = 4000

// flightsSchema is testdata/flights-10k.parquet as an Iceberg schema, every
// field optional as in the file.
var flightsSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "date", Type: iceberg.PrimitiveTypes.Timestamp},
	iceberg.NestedField{ID: 2, Name: "delay", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 3, Name: "distance", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 4, Name: "origin", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 5, Name: "destination", Type: iceberg.PrimitiveTypes.String},
)

// tarnURI is the server under test; the test fails without it.
func tarnURI(t *testing.T) string {
	t.Helper()
	uri := strings.TrimRight(strings.TrimSpace(os.Getenv("TARN_URI")), "/")
	if uri == "" {
		t.Fatal("TARN_URI is not set: start Tarn (conformance/run does it) and export TARN_URI")
	}
	return uri
}

// warehouseURI is TARN_WAREHOUSE without a trailing slash; the test fails without it.
func warehouseURI(t *testing.T) string {
	t.Helper()
	wh := strings.TrimRight(strings.TrimSpace(os.Getenv("TARN_WAREHOUSE")), "/")
	if !strings.HasPrefix(wh, "file://") {
		t.Fatalf("TARN_WAREHOUSE must be the server's file:// warehouse URI, got %q", wh)
	}
	return wh
}

// newCatalog returns iceberg-go's REST client pointed at TARN_URI.
func newCatalog(t *testing.T) *rest.Catalog {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var opts []rest.Option
	if tok := os.Getenv("TARN_TOKEN"); tok != "" {
		opts = append(opts, rest.WithOAuthToken(tok))
	}
	cat, err := rest.NewCatalog(ctx, "tarn", tarnURI(t), opts...)
	require.NoError(t, err, "GET /v1/config")
	return cat
}

// newNamespace creates a namespace unique to this run and drops it (with
// whatever tables and views are left in it) when t ends.
func newNamespace(t *testing.T, cat *rest.Catalog, prefix string) table.Identifier {
	t.Helper()
	ns := table.Identifier{prefix + "_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]}
	require.NoError(t, cat.CreateNamespace(t.Context(), ns, iceberg.Properties{"owner": "tarn-conformance-iceberg-go"}))
	t.Cleanup(func() {
		ctx := context.Background()
		for id, err := range cat.ListViews(ctx, ns) {
			if err == nil {
				_ = cat.DropView(ctx, id)
			}
		}
		for id, err := range cat.ListTables(ctx, ns) {
			if err == nil {
				_ = cat.PurgeTable(ctx, id)
			}
		}
		_ = cat.DropNamespace(ctx, ns)
	})
	return ns
}

// TestCatalogConformance runs iceberg-go's shared catalog suite through its
// REST client against the running server. The suite names every namespace
// uniquely, so one server serves all of its tests.
func TestCatalogConformance(t *testing.T) {
	catalogtest.RunCatalogTests(t, catalogtest.Config{
		SupportsNamespaceProperties: true,
		NewCatalog:                  func(t *testing.T) catalog.Catalog { return newCatalog(t) },
	})
}

// answers is the flights entry of testdata/answers.json.
type answers struct {
	Rows        int64 `json:"rows"`
	SumDelay    int64 `json:"sum_delay"`
	SumDistance int64 `json:"sum_distance"`
}

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	// The test binary runs in the package directory, conformance/iceberg-go.
	p, err := filepath.Abs(filepath.Join("..", "..", rel))
	require.NoError(t, err)
	return p
}

func loadAnswers(t *testing.T) answers {
	t.Helper()
	b, err := os.ReadFile(repoFile(t, "testdata/answers.json"))
	require.NoError(t, err)
	var all map[string]answers
	require.NoError(t, json.Unmarshal(b, &all))
	a, ok := all["flights-10k.parquet"]
	require.True(t, ok, "answers.json has no flights-10k.parquet entry")
	return a
}

// readFlights reads testdata/flights-10k.parquet with arrow-go's pqarrow.
func readFlights(t *testing.T) arrow.Table {
	t.Helper()
	rdr, err := file.OpenParquetFile(repoFile(t, "testdata/flights-10k.parquet"), false)
	require.NoError(t, err)
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 4096}, memory.DefaultAllocator)
	require.NoError(t, err)
	tbl, err := fr.ReadTable(context.Background())
	require.NoError(t, err)
	t.Cleanup(tbl.Release)
	return tbl
}

// totals are the checked aggregates of a set of flights.
type totals struct {
	Rows        int64
	SumDelay    int64
	SumDistance int64
	// ByOrigin counts flights per origin airport.
	ByOrigin map[string]int64
}

func column(t *testing.T, tbl arrow.Table, name string) *arrow.Chunked {
	t.Helper()
	idx := tbl.Schema().FieldIndices(name)
	require.Len(t, idx, 1, "column %q in %s", name, tbl.Schema())
	return tbl.Column(idx[0]).Data()
}

func sumInt64(t *testing.T, col *arrow.Chunked) int64 {
	t.Helper()
	var sum int64
	for _, chunk := range col.Chunks() {
		a, ok := chunk.(*array.Int64)
		require.True(t, ok, "want int64, got %s", chunk.DataType())
		for i := range a.Len() {
			if a.IsValid(i) {
				sum += a.Value(i)
			}
		}
	}
	return sum
}

// stringsOf returns a string column's values ("" for null), whatever its
// Arrow string flavour.
func stringsOf(t *testing.T, col *arrow.Chunked) []string {
	t.Helper()
	var out []string
	for _, chunk := range col.Chunks() {
		for i := range chunk.Len() {
			switch a := chunk.(type) {
			case *array.String:
				out = append(out, a.Value(i))
			case *array.LargeString:
				out = append(out, a.Value(i))
			case *array.StringView:
				out = append(out, a.Value(i))
			default:
				t.Fatalf("want a string column, got %s", chunk.DataType())
			}
		}
	}
	return out
}

func totalsOf(t *testing.T, tbl arrow.Table) totals {
	t.Helper()
	tot := totals{
		Rows:        tbl.NumRows(),
		SumDelay:    sumInt64(t, column(t, tbl, "delay")),
		SumDistance: sumInt64(t, column(t, tbl, "distance")),
		ByOrigin:    map[string]int64{},
	}
	for _, o := range stringsOf(t, column(t, tbl, "origin")) {
		tot.ByOrigin[o]++
	}
	return tot
}

// scan reads tbl (with opts) into memory.
func scan(t *testing.T, tbl *table.Table, opts ...table.ScanOption) arrow.Table {
	t.Helper()
	res, err := tbl.Scan(opts...).ToArrowTable(t.Context())
	require.NoError(t, err)
	t.Cleanup(res.Release)
	return res
}

// sliceTable returns rows [i, j) of tbl.
func sliceTable(tbl arrow.Table, i, j int64) arrow.Table {
	cols := make([]arrow.Column, tbl.NumCols())
	for c := range cols {
		col := array.NewColumnSlice(tbl.Column(c), i, j)
		defer col.Release()
		cols[c] = *col
	}
	return array.NewTable(tbl.Schema(), cols, j-i)
}

// topOrigins returns the n origins with the most flights, busiest first.
func topOrigins(byOrigin map[string]int64, n int) []string {
	keys := make([]string, 0, len(byOrigin))
	for k := range byOrigin {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if byOrigin[a] != byOrigin[b] {
			return int(byOrigin[b] - byOrigin[a])
		}
		return strings.Compare(a, b)
	})
	return keys[:min(n, len(keys))]
}

// TestFlights writes the flights file through iceberg-go in two appends and
// reads it back: totals, time travel, a row filter, schema evolution. The
// steps share one table and run in order; a step fails when an earlier one
// did not leave what it needs.
func TestFlights(t *testing.T) {
	want := loadAnswers(t)
	flights := readFlights(t)
	wantAll := totalsOf(t, flights)
	// The file is what answers.json says it is.
	require.Equal(t, want.Rows, wantAll.Rows)
	require.Equal(t, want.SumDelay, wantAll.SumDelay)
	require.Equal(t, want.SumDistance, wantAll.SumDistance)

	first := sliceTable(flights, 0, firstAppend)
	defer first.Release()
	rest := sliceTable(flights, firstAppend, flights.NumRows())
	defer rest.Release()
	wantFirst := totalsOf(t, first)

	cat := newCatalog(t)
	ns := newNamespace(t, cat, "icebergo")
	ident := append(slices.Clone(ns), "flights")
	warehouse := warehouseURI(t)

	var (
		tbl           *table.Table
		firstSnapshot int64
	)
	need := func(t *testing.T) {
		t.Helper()
		if tbl == nil {
			t.Fatal("an earlier step did not complete")
		}
	}

	t.Run("create", func(t *testing.T) {
		created, err := cat.CreateTable(t.Context(), ident, flightsSchema,
			catalog.WithProperties(iceberg.Properties{"tarn.test": "iceberg-go"}))
		require.NoError(t, err)
		assert.Equal(t, flightsSchema.AsStruct(), created.Schema().AsStruct())
		assert.True(t, strings.HasPrefix(created.Location(), warehouse+"/"),
			"location %s lies in the warehouse %s", created.Location(), warehouse)
		assert.Nil(t, created.CurrentSnapshot())
		assert.Equal(t, "iceberg-go", created.Properties()["tarn.test"])
		tbl = created
	})

	t.Run("append twice", func(t *testing.T) {
		need(t)
		tx := tbl.NewTransaction()
		require.NoError(t, tx.AppendTable(t.Context(), first, 4096, nil))
		after1, err := tx.Commit(t.Context())
		require.NoError(t, err)
		s1 := after1.CurrentSnapshot()
		require.NotNil(t, s1)

		tx = after1.NewTransaction()
		require.NoError(t, tx.AppendTable(t.Context(), rest, 4096, nil))
		after2, err := tx.Commit(t.Context())
		require.NoError(t, err)
		s2 := after2.CurrentSnapshot()
		require.NotNil(t, s2)
		require.NotEqual(t, s1.SnapshotID, s2.SnapshotID)
		require.NotNil(t, s2.ParentSnapshotID)
		assert.Equal(t, s1.SnapshotID, *s2.ParentSnapshotID)
		assert.Equal(t, table.OpAppend, s2.Summary.Operation)

		firstSnapshot = s1.SnapshotID
		tbl = after2
	})

	t.Run("load and scan totals", func(t *testing.T) {
		need(t)
		loaded, err := cat.LoadTable(t.Context(), ident)
		require.NoError(t, err)
		require.Len(t, loaded.Metadata().Snapshots(), 2)
		assert.Equal(t, tbl.CurrentSnapshot().SnapshotID, loaded.CurrentSnapshot().SnapshotID)

		got := totalsOf(t, scan(t, loaded))
		assert.Equal(t, want.Rows, got.Rows, "rows")
		assert.Equal(t, want.SumDistance, got.SumDistance, "sum(distance)")
		assert.Equal(t, want.SumDelay, got.SumDelay, "sum(delay)")
		assert.Equal(t, wantAll.ByOrigin, got.ByOrigin, "flights per origin")

		// Every data file lies in the table's location inside the warehouse.
		tasks, err := loaded.Scan().PlanFiles(t.Context())
		require.NoError(t, err)
		assert.Len(t, tasks, 2, "one data file per append")
		for _, task := range tasks {
			assert.True(t, strings.HasPrefix(task.File.FilePath(), loaded.Location()+"/"),
				"data file %s lies under %s", task.File.FilePath(), loaded.Location())
		}
		tbl = loaded
	})

	t.Run("time travel to the first snapshot", func(t *testing.T) {
		need(t)
		require.NotZero(t, firstSnapshot)
		got := totalsOf(t, scan(t, tbl, table.WithSnapshotID(firstSnapshot)))
		assert.Equal(t, int64(firstAppend), got.Rows)
		assert.Equal(t, wantFirst.SumDistance, got.SumDistance, "sum(distance)")
		assert.Equal(t, wantFirst.SumDelay, got.SumDelay, "sum(delay)")
	})

	t.Run("row filter per origin", func(t *testing.T) {
		need(t)
		for _, origin := range topOrigins(wantAll.ByOrigin, 3) {
			res := scan(t, tbl, table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("origin"), origin)))
			got := totalsOf(t, res)
			assert.Equal(t, map[string]int64{origin: wantAll.ByOrigin[origin]}, got.ByOrigin, "origin %s", origin)
		}
		res := scan(t, tbl, table.WithRowFilter(iceberg.GreaterThanEqual(iceberg.Reference("distance"), int64(2000))),
			table.WithSelectedFields("distance"))
		var wantN, wantSum int64
		for _, chunk := range column(t, flights, "distance").Chunks() {
			a := chunk.(*array.Int64)
			for i := range a.Len() {
				if a.IsValid(i) && a.Value(i) >= 2000 {
					wantN++
					wantSum += a.Value(i)
				}
			}
		}
		assert.Equal(t, wantN, res.NumRows(), "flights of 2000 miles or more")
		assert.Equal(t, wantSum, sumInt64(t, column(t, res, "distance")))
	})

	t.Run("schema evolution through the transaction API", func(t *testing.T) {
		need(t)
		tx := tbl.NewTransaction()
		require.NoError(t, tx.UpdateSchema(true, false).
			AddColumn([]string{"carrier"}, iceberg.PrimitiveTypes.String, "airline code", false, nil).
			RenameColumn([]string{"delay"}, "delay_minutes").
			Commit())
		evolved, err := tx.Commit(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 1, evolved.Schema().ID)
		assert.Len(t, evolved.Metadata().Schemas(), 2)

		loaded, err := cat.LoadTable(t.Context(), ident)
		require.NoError(t, err)
		assert.Equal(t, 1, loaded.Schema().ID)
		carrier, ok := loaded.Schema().FindFieldByName("carrier")
		require.True(t, ok, "carrier in %s", loaded.Schema())
		assert.Equal(t, 6, carrier.ID)
		renamed, ok := loaded.Schema().FindFieldByName("delay_minutes")
		require.True(t, ok, "delay_minutes in %s", loaded.Schema())
		assert.Equal(t, 2, renamed.ID, "a rename keeps the field ID")
		_, ok = loaded.Schema().FindFieldByName("delay")
		assert.False(t, ok)

		// Old files are read by field ID: the renamed column keeps its data,
		// the new one is null.
		res := scan(t, loaded)
		assert.Equal(t, want.Rows, res.NumRows())
		assert.Equal(t, want.SumDelay, sumInt64(t, column(t, res, "delay_minutes")))
		assert.Equal(t, int64(res.NumRows()), int64(column(t, res, "carrier").NullN()), "carrier is null for old rows")

		// Rows written with the new schema carry the new column.
		sc, err := table.SchemaToArrowSchema(loaded.Schema(), nil, false, false)
		require.NoError(t, err)
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		for i, f := range sc.Fields() {
			switch f.Name {
			case "date":
				b.Field(i).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2001, 2, 1, 8, 0, 0, 0, time.UTC).UnixMicro()))
			case "delay_minutes":
				b.Field(i).(*array.Int64Builder).Append(7)
			case "distance":
				b.Field(i).(*array.Int64Builder).Append(100)
			case "origin", "destination", "carrier":
				val := map[string]string{"origin": "TRN", "destination": "ICE", "carrier": "GO"}[f.Name]
				switch fb := b.Field(i).(type) {
				case *array.StringBuilder:
					fb.Append(val)
				case *array.LargeStringBuilder:
					fb.Append(val)
				default:
					t.Fatalf("column %s: unexpected builder %T", f.Name, fb)
				}
			default:
				t.Fatalf("unexpected column %s", f.Name)
			}
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		extra := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
		defer extra.Release()
		tx = loaded.NewTransaction()
		require.NoError(t, tx.AppendTable(t.Context(), extra, 16, nil))
		appended, err := tx.Commit(t.Context())
		require.NoError(t, err)

		res = scan(t, appended, table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("carrier"), "GO")))
		require.Equal(t, int64(1), res.NumRows())
		assert.Equal(t, []string{"TRN"}, stringsOf(t, column(t, res, "origin")))
		assert.Equal(t, int64(7), sumInt64(t, column(t, res, "delay_minutes")))
		all := scan(t, appended)
		assert.Equal(t, want.Rows+1, all.NumRows())
		assert.Equal(t, want.SumDelay+7, sumInt64(t, column(t, all, "delay_minutes")))
		tbl = appended
	})

	t.Run("purge", func(t *testing.T) {
		need(t)
		location := strings.TrimPrefix(tbl.Location(), "file://")
		require.NoError(t, cat.PurgeTable(t.Context(), ident))
		exists, err := cat.CheckTableExists(t.Context(), ident)
		require.NoError(t, err)
		assert.False(t, exists)
		// The spec lets a server purge asynchronously; Tarn does it before
		// answering: no data, manifest or metadata file is left.
		var left []string
		err = filepath.WalkDir(location, func(p string, d os.DirEntry, err error) error {
			if os.IsNotExist(err) {
				return filepath.SkipDir
			}
			if err == nil && !d.IsDir() {
				left = append(left, p)
			}
			return err
		})
		require.NoError(t, err)
		assert.Empty(t, left, "files left after purge")
	})
}

// TestView creates, loads, lists and drops a view through the REST client.
func TestView(t *testing.T) {
	cat := newCatalog(t)
	ns := newNamespace(t, cat, "icebergo_view")
	ident := append(slices.Clone(ns), "busy_origins")
	sql := "SELECT origin, count(*) AS flights FROM flights GROUP BY origin"
	version, err := view.NewVersionFromSQL(1, 0, sql, ns)
	require.NoError(t, err)
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "origin", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 2, Name: "flights", Type: iceberg.PrimitiveTypes.Int64},
	)

	created, err := cat.CreateView(t.Context(), ident, version, schema,
		catalog.WithViewProperties(iceberg.Properties{"comment": "busiest origins"}))
	require.NoError(t, err)
	assert.Equal(t, ident, created.Identifier())

	exists, err := cat.CheckViewExists(t.Context(), ident)
	require.NoError(t, err)
	assert.True(t, exists)

	loaded, err := cat.LoadView(t.Context(), ident)
	require.NoError(t, err)
	md := loaded.Metadata()
	assert.Equal(t, created.Metadata().ViewUUID(), md.ViewUUID())
	assert.Equal(t, "busiest origins", md.Properties()["comment"])
	cur := md.CurrentVersion()
	require.NotNil(t, cur)
	require.Len(t, cur.Representations, 1)
	assert.Equal(t, sql, cur.Representations[0].Sql)
	assert.Equal(t, ns, table.Identifier(cur.DefaultNamespace))
	assert.Equal(t, schema.AsStruct(), md.CurrentSchema().AsStruct())

	var listed []table.Identifier
	for id, err := range cat.ListViews(t.Context(), ns) {
		require.NoError(t, err)
		listed = append(listed, id)
	}
	assert.Equal(t, []table.Identifier{ident}, listed)
	// Views and tables share names, but a view is not listed as a table.
	for id, err := range cat.ListTables(t.Context(), ns) {
		require.NoError(t, err)
		t.Errorf("unexpected table %v", id)
	}

	require.NoError(t, cat.DropView(t.Context(), ident))
	exists, err = cat.CheckViewExists(t.Context(), ident)
	require.NoError(t, err)
	assert.False(t, exists)
	_, err = cat.LoadView(t.Context(), ident)
	assert.ErrorIs(t, err, catalog.ErrNoSuchView)
	assert.ErrorIs(t, cat.DropView(t.Context(), ident), catalog.ErrNoSuchView)
}

// TestMain names the server under test on stderr.
func TestMain(m *testing.M) {
	fmt.Fprintf(os.Stderr, "icebergo: iceberg-go REST client against %s (warehouse %s)\n",
		os.Getenv("TARN_URI"), os.Getenv("TARN_WAREHOUSE"))
	os.Exit(m.Run())
}
