package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/spec"
)

// tableChange is one entry of a CommitTransactionRequest, encoded with
// iceberg-go's own requirement and update types.
func tableChange(t *testing.T, ns []string, name string, reqs []table.Requirement, updates ...table.Update) json.RawMessage {
	t.Helper()
	return json.RawMessage(commitBody(t, ns, name, reqs, updates))
}

// tableState is what a failed transaction must leave alone: the pointer
// and the metadata files of one table.
type tableState struct {
	metadataLocation string
	files            []string
}

func (e *env) tableState(t *testing.T, ns []string, name string) tableState {
	t.Helper()
	loc, md := e.loadRaw(t, ns, name)
	return tableState{metadataLocation: loc, files: metadataFiles(t, md.Location())}
}

func (e *env) requireUnchanged(t *testing.T, ns []string, name string, want tableState) {
	t.Helper()
	got := e.tableState(t, ns, name)
	assert.Equal(t, want.metadataLocation, got.metadataLocation, "%s: metadata-location", name)
	assert.ElementsMatch(t, want.files, got.files, "%s: no metadata file left behind", name)
}

// TestMultiTableTransactions commits across tables through POST
// /v1/{prefix}/transactions/commit and iceberg-go's MultiTableTransaction:
// every table changes or none does.
func TestMultiTableTransactions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "tx")
	a := appendRows(t, e.createTable(t, ns, "a"), 1, 2)
	b := e.createTable(t, ns, "b")
	commitPath := prefixPath("/transactions/commit")
	props := func(kv ...string) table.Update {
		p := iceberg.Properties{}
		for i := 0; i < len(kv); i += 2 {
			p[kv[i]] = kv[i+1]
		}
		return table.NewSetPropertiesUpdate(p)
	}
	txBody := func(changes ...json.RawMessage) map[string]any {
		return map[string]any{"table-changes": changes}
	}

	t.Run("two tables both change", func(t *testing.T) {
		a, b := e.load(t, a.Identifier()), e.load(t, b.Identifier())
		r := e.do(t, http.MethodPost, commitPath, txBody(
			tableChange(t, ns, "a", []table.Requirement{table.AssertTableUUID(a.Metadata().TableUUID()), table.AssertRefSnapshotID("main", &a.CurrentSnapshot().SnapshotID)},
				props("round", "1"), table.NewSetSnapshotRefUpdate("tagged", a.CurrentSnapshot().SnapshotID, table.TagRef, 0, 0, 0)),
			tableChange(t, ns, "b", []table.Requirement{table.AssertCurrentSchemaID(0)},
				table.NewAddSchemaUpdate(schemaWithExtra()), table.NewSetCurrentSchemaUpdate(-1)),
		))
		require.Equal(t, http.StatusNoContent, r.Status, "body: %s", r.Body)
		assert.Empty(t, r.Body)

		gotA, gotB := e.load(t, a.Identifier()), e.load(t, b.Identifier())
		assert.NotEqual(t, a.MetadataLocation(), gotA.MetadataLocation())
		assert.Equal(t, "1", gotA.Properties()["round"])
		require.NotNil(t, gotA.SnapshotByName("tagged"))
		assert.Equal(t, a.CurrentSnapshot().SnapshotID, gotA.SnapshotByName("tagged").SnapshotID)
		assert.NotEqual(t, b.MetadataLocation(), gotB.MetadataLocation())
		assert.Equal(t, []string{"id", "data", "extra"}, fieldNames(gotB.Schema()))
	})

	t.Run("through iceberg-go's MultiTableTransaction", func(t *testing.T) {
		a, b := e.load(t, a.Identifier()), e.load(t, b.Identifier())
		mtx, err := catalog.NewMultiTableTransaction(e.cat)
		require.NoError(t, err)
		txA := a.NewTransaction()
		require.NoError(t, txA.SetProperties(iceberg.Properties{"round": "2"}))
		require.NoError(t, mtx.AddTransaction(txA))
		txB := b.NewTransaction()
		require.NoError(t, txB.AppendTable(t.Context(), arrowRows(t, 10, 20, 30), 1024, nil))
		require.NoError(t, mtx.AddTransaction(txB))

		tables, err := mtx.CommitAndReload(t.Context())
		require.NoError(t, err)
		require.Len(t, tables, 2)
		assert.Equal(t, "2", tables[0].Properties()["round"])
		count, sum := scanCountAndSum(t, tables[1])
		assert.Equal(t, int64(3), count)
		assert.Equal(t, int64(60), sum)
		count, _ = scanCountAndSum(t, tables[0])
		assert.Equal(t, int64(2), count, "a's data is untouched")
	})

	t.Run("a create and an update together", func(t *testing.T) {
		md := e.stageCreate(t, ns, spec.CreateTableRequest{Name: "c", Schema: idDataSchema()})
		before := e.load(t, a.Identifier())
		r := e.do(t, http.MethodPost, commitPath, txBody(
			tableChange(t, ns, "c", []table.Requirement{table.AssertCreate()}, createUpdates(md)...),
			tableChange(t, ns, "a", []table.Requirement{table.AssertTableUUID(before.Metadata().TableUUID())}, props("round", "3")),
		))
		require.Equal(t, http.StatusNoContent, r.Status, "body: %s", r.Body)
		assert.Equal(t, md.TableUUID(), e.load(t, tableIdent(ns, "c")).Metadata().TableUUID())
		assert.Equal(t, "3", e.load(t, a.Identifier()).Properties()["round"])
	})

	failing := []struct {
		name       string
		changes    func(t *testing.T, a, b *table.Table) []json.RawMessage
		wantStatus int
		wantType   string
	}{
		{
			name: "second table's requirement fails",
			changes: func(t *testing.T, a, b *table.Table) []json.RawMessage {
				return []json.RawMessage{
					tableChange(t, ns, "a", []table.Requirement{table.AssertTableUUID(a.Metadata().TableUUID())}, props("round", "lost")),
					tableChange(t, ns, "b", []table.Requirement{table.AssertTableUUID(uuid.New())}, props("round", "lost")),
				}
			},
			wantStatus: http.StatusConflict, wantType: "CommitFailedException",
		},
		{
			name: "first table's requirement fails",
			changes: func(t *testing.T, a, b *table.Table) []json.RawMessage {
				stale := int64(12345)
				return []json.RawMessage{
					tableChange(t, ns, "a", []table.Requirement{table.AssertRefSnapshotID("main", &stale)}, props("round", "lost")),
					tableChange(t, ns, "b", nil, props("round", "lost")),
				}
			},
			wantStatus: http.StatusConflict, wantType: "CommitFailedException",
		},
		{
			name: "a missing table",
			changes: func(t *testing.T, a, b *table.Table) []json.RawMessage {
				return []json.RawMessage{
					tableChange(t, ns, "a", nil, props("round", "lost")),
					tableChange(t, ns, "b", nil, props("round", "lost")),
					tableChange(t, ns, "missing", nil, props("round", "lost")),
				}
			},
			wantStatus: http.StatusNotFound, wantType: "NoSuchTableException",
		},
		{
			name: "a table in a missing namespace",
			changes: func(t *testing.T, a, b *table.Table) []json.RawMessage {
				return []json.RawMessage{
					tableChange(t, ns, "a", nil, props("round", "lost")),
					tableChange(t, []string{"nowhere"}, "b", nil, props("round", "lost")),
				}
			},
			wantStatus: http.StatusNotFound, wantType: "NoSuchTableException",
		},
		{
			name: "the same table twice",
			changes: func(t *testing.T, a, b *table.Table) []json.RawMessage {
				return []json.RawMessage{
					tableChange(t, ns, "a", nil, props("round", "lost")),
					tableChange(t, ns, "b", nil, props("round", "lost")),
					tableChange(t, ns, "a", nil, props("other", "lost")),
				}
			},
			wantStatus: http.StatusBadRequest, wantType: "IllegalArgumentException",
		},
		{
			name: "an invalid update on the second table",
			changes: func(t *testing.T, a, b *table.Table) []json.RawMessage {
				return []json.RawMessage{
					tableChange(t, ns, "a", nil, props("round", "lost")),
					tableChange(t, ns, "b", nil, table.NewSetCurrentSchemaUpdate(99)),
				}
			},
			wantStatus: http.StatusBadRequest, wantType: "IllegalArgumentException",
		},
		{
			name: "a change without an identifier",
			changes: func(t *testing.T, a, b *table.Table) []json.RawMessage {
				return []json.RawMessage{
					tableChange(t, ns, "a", nil, props("round", "lost")),
					json.RawMessage(`{"requirements":[],"updates":[{"action":"set-properties","updates":{"round":"lost"}}]}`),
				}
			},
			wantStatus: http.StatusBadRequest, wantType: "BadRequestException",
		},
		{
			name:       "no table changes",
			changes:    func(t *testing.T, a, b *table.Table) []json.RawMessage { return []json.RawMessage{} },
			wantStatus: http.StatusBadRequest, wantType: "IllegalArgumentException",
		},
	}
	for _, tt := range failing {
		t.Run(tt.name, func(t *testing.T) {
			stateA, stateB := e.tableState(t, ns, "a"), e.tableState(t, ns, "b")
			r := e.do(t, http.MethodPost, commitPath, txBody(tt.changes(t, e.load(t, a.Identifier()), e.load(t, b.Identifier()))...))
			requireError(t, r, tt.wantStatus, tt.wantType)
			e.requireUnchanged(t, ns, "a", stateA)
			e.requireUnchanged(t, ns, "b", stateB)
			assert.NotEqual(t, "lost", e.load(t, a.Identifier()).Properties()["round"])
			assert.NotEqual(t, "lost", e.load(t, b.Identifier()).Properties()["round"])
		})
	}

	t.Run("a stale MultiTableTransaction fails as a whole", func(t *testing.T) {
		staleA, freshB := e.load(t, a.Identifier()), e.load(t, b.Identifier())
		// Another writer appends to a after staleA was read.
		appendRows(t, e.load(t, a.Identifier()), 3)
		stateA, stateB := e.tableState(t, ns, "a"), e.tableState(t, ns, "b")

		mtx, err := catalog.NewMultiTableTransaction(e.cat)
		require.NoError(t, err)
		txA := staleA.NewTransaction()
		require.NoError(t, txA.AssertRefSnapshotID(""))
		require.NoError(t, txA.SetProperties(iceberg.Properties{"round": "stale"}))
		require.NoError(t, mtx.AddTransaction(txA))
		txB := freshB.NewTransaction()
		require.NoError(t, txB.SetProperties(iceberg.Properties{"round": "stale"}))
		require.NoError(t, mtx.AddTransaction(txB))

		err = mtx.Commit(t.Context())
		require.ErrorIs(t, err, table.ErrCommitFailed)
		e.requireUnchanged(t, ns, "a", stateA)
		e.requireUnchanged(t, ns, "b", stateB)
	})

	t.Run("client maps a missing table to ErrNoSuchTable", func(t *testing.T) {
		err := e.cat.CommitTransaction(t.Context(), []table.TableCommit{
			{Identifier: a.Identifier(), Updates: []table.Update{props("round", "lost")}},
			{Identifier: tableIdent(ns, "missing"), Updates: []table.Update{props("round", "lost")}},
		})
		assert.ErrorIs(t, err, catalog.ErrNoSuchTable)
		assert.NotEqual(t, "lost", e.load(t, a.Identifier()).Properties()["round"])
	})
}
