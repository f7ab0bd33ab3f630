//go:build integration

package icebergo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// runJobs runs maintenance jobs on table ns.name through Tarn's
// management API (what `tarn maintenance run` calls) and returns their
// results.
func runJobs(t *testing.T, ident table.Identifier, jobs ...string) []map[string]any {
	t.Helper()
	body, err := json.Marshal(map[string]any{"table": strings.Join(ident, "."), "jobs": jobs})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, tarnURI(t)+"/management/v1/maintenance/run", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if tok := os.Getenv("TARN_TOKEN"); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	rsp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer rsp.Body.Close()
	raw, err := io.ReadAll(rsp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, rsp.StatusCode, "%s", raw)
	var out struct {
		Results []map[string]any `json:"results"`
	}
	require.NoError(t, json.Unmarshal(raw, &out))
	require.Len(t, out.Results, len(jobs))
	return out.Results
}

func num(r map[string]any, k string) int {
	f, _ := r[k].(float64)
	return int(f)
}

// TestMaintenanceOfIcebergGoTable: Tarn compacts, expires, rewrites the
// manifests of and removes orphans from a table iceberg-go wrote (six
// appends and a merge-on-read delete: position delete files), and after
// each job iceberg-go reads exactly the rows it read before.
func TestMaintenanceOfIcebergGoTable(t *testing.T) {
	flights := readFlights(t)
	cat := newCatalog(t)
	ns := newNamespace(t, cat, "icebergo_maint")
	ident := append(slices.Clone(ns), "maintained")
	tbl, err := cat.CreateTable(t.Context(), ident, flightsSchema, catalog.WithProperties(iceberg.Properties{
		table.WriteDeleteModeKey:                   table.WriteModeMergeOnRead,
		"tarn.maintenance.compact.min-input-files": "2",
		"tarn.maintenance.orphans.older-than-ms":   "3600000",
		table.MaxSnapshotAgeMsKey:                  "1",
		table.MinSnapshotsToKeepKey:                "1",
	}))
	require.NoError(t, err)
	step := flights.NumRows() / 6
	for i := range int64(6) {
		end := (i + 1) * step
		if i == 5 {
			end = flights.NumRows()
		}
		part := sliceTable(flights, i*step, end)
		txn := tbl.NewTransaction()
		require.NoError(t, txn.AppendTable(t.Context(), part, 1<<20, nil))
		tbl, err = txn.Commit(t.Context())
		part.Release()
		require.NoError(t, err)
	}
	txn := tbl.NewTransaction()
	require.NoError(t, txn.Delete(t.Context(), iceberg.EqualTo(iceberg.Reference("origin"), "ORD"), nil))
	tbl, err = txn.Commit(t.Context())
	require.NoError(t, err)

	// read is what iceberg-go reads of the table now: every row's
	// distance and origin, sorted.
	read := func() []string {
		t.Helper()
		tbl, err := cat.LoadTable(t.Context(), ident)
		require.NoError(t, err)
		res := scan(t, tbl, table.WithSelectedFields("distance", "origin"))
		var out []string
		origins := stringsOf(t, column(t, res, "origin"))
		for _, chunk := range column(t, res, "distance").Chunks() {
			d := chunk.(*array.Int64)
			for i := range d.Len() {
				out = append(out, fmt.Sprintf("%d/%s", d.Value(i), origins[len(out)]))
			}
		}
		slices.Sort(out)
		return out
	}
	want := read()
	require.Len(t, want, int(flights.NumRows()-totalsOf(t, flights).ByOrigin["ORD"]))
	same := func(msg string) {
		t.Helper()
		got := read()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: iceberg-go reads %d rows, read %d before", msg, len(got), len(want))
		}
	}
	time.Sleep(10 * time.Millisecond)

	r := runJobs(t, ident, "compact")[0]
	require.Empty(t, r["skipped"], r)
	require.GreaterOrEqual(t, num(r, "files-rewritten"), 6, r)
	same("read after compaction")

	time.Sleep(10 * time.Millisecond)
	r = runJobs(t, ident, "expire")[0]
	require.Empty(t, r["skipped"], r)
	require.Positive(t, num(r, "snapshots-expired"), r)
	same("read after expiry")

	r = runJobs(t, ident, "manifests")[0]
	require.Contains(t, []any{nil, "few manifests", "manifests already optimal"}, r["skipped"], r)
	same("read after manifest rewriting")

	dir := strings.TrimPrefix(tbl.Location(), "file://") + "/data"
	orphan := filepath.Join(dir, "tarn-orphan-"+uuid.NewString()+".parquet")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(orphan, []byte("not referenced"), 0o644))
	old := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(orphan, old, old))
	r = runJobs(t, ident, "orphans")[0]
	require.Empty(t, r["skipped"], r)
	require.Equal(t, 1, num(r, "orphans-removed"), r)
	_, err = os.Stat(orphan)
	require.ErrorIs(t, err, os.ErrNotExist)
	same("read after orphan removal")
}
