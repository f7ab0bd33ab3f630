package maintenance

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
)

// forgetUnlisted keeps a table the listing lacks while a run holds or
// waits for its lock, or when a run began after the listing did (a table
// created since, run on request): forgetting either would let a second
// lock run jobs beside the first, or lose a live table's status.
func TestForgetUnlistedKeepsTablesInUse(t *testing.T) {
	s, err := New(Config{}, Deps{Catalog: &catalog.Catalog{}})
	require.NoError(t, err)
	for key, l := range map[string]*runLock{
		"db.listed":  {seen: 1},
		"db.running": {users: 1, seen: 2},
		"db.newer":   {seen: 4},
		"db.dropped": {seen: 3},
	} {
		s.runLocks[key] = l
		s.tables[key] = &tableState{TableStatus: TableStatus{Table: key}}
		s.m.files.WithLabelValues(key).Set(1)
	}
	s.forgetUnlisted([]catalog.Ident{{Namespace: catalog.Namespace{"db"}, Name: "listed"}}, 3)
	require.ElementsMatch(t, []string{"db.listed", "db.running", "db.newer"}, keys(s.runLocks))
	require.ElementsMatch(t, []string{"db.listed", "db.running", "db.newer"}, keys(s.tables))
	require.Equal(t, 3, testutil.CollectAndCount(s.m.files), "tarn_maintenance_table_files series")
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
