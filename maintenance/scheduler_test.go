package maintenance_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/spec"
)

// Regression (issue 21 item 6): the scheduler kept a dropped table's run
// lock, status entry and per-table metric series for the life of the
// process (GET /management/v1/maintenance listed it, /metrics exported
// its last gauges). The next pass forgets the tables the catalog no
// longer lists, and keeps the others.
func TestPassForgetsDroppedTables(t *testing.T) {
	h := newHarness(t, nil)
	h.ingest(10, 10)
	other := catalog.Ident{Namespace: tableIdent.Namespace, Name: "other"}
	_, err := h.cat.CreateTable(h.ctx, h.wh, other.Namespace, spec.CreateTableRequest{Name: other.Name, Schema: testSchema})
	require.NoError(t, err)

	require.NoError(t, h.sched.Pass(h.ctx))
	st := h.sched.Status()
	require.Len(t, st.Tables, 2)
	require.Equal(t, "air.flights", st.Tables[0].Table)
	require.Equal(t, int64(1), st.Tables[0].Jobs[maintenance.JobCompact].Runs)
	require.Equal(t, 2, h.sched.RunLocksForTest())
	perTable := []string{"tarn_maintenance_table_files", "tarn_maintenance_table_bytes", "tarn_maintenance_table_snapshots",
		"tarn_maintenance_files_compacted_total", "tarn_maintenance_rewritten_bytes_total", "tarn_maintenance_snapshots_expired_total",
		"tarn_maintenance_orphans_removed_total"}
	for _, name := range perTable {
		_, ok := metricWith(t, h.reg, name, "table", "air.flights")
		require.True(t, ok, "%s{table=air.flights} before the drop", name)
	}
	require.Equal(t, 2.0, metricValue(t, h, "tarn_maintenance_table_files"))

	require.NoError(t, h.cat.DropTable(h.ctx, h.wh, tableIdent, false))
	require.NoError(t, h.sched.Pass(h.ctx))

	st = h.sched.Status()
	require.Len(t, st.Tables, 1, "status after the drop: %+v", st.Tables)
	require.Equal(t, "air.other", st.Tables[0].Table)
	require.Equal(t, 1, h.sched.RunLocksForTest())
	for _, name := range perTable {
		_, ok := metricWith(t, h.reg, name, "table", "air.flights")
		require.False(t, ok, "%s{table=air.flights} after the drop", name)
	}
	_, ok := metricWith(t, h.reg, "tarn_maintenance_table_snapshots", "table", "air.other")
	require.True(t, ok, "the listed table keeps its gauges")
}
