// Package testwriter commits to tables in tests as writers other than
// Tarn do: with snapshot summaries that hold nothing but the operation,
// as DuckDB 1.4 writes them (the Iceberg spec makes every other summary
// field optional: https://iceberg.apache.org/spec/#snapshots).
package testwriter

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
)

// OnlyOperation returns updates with the summary of every add-snapshot
// update cut down to its operation. The snapshot is read with
// catalog.AddedSnapshot, since iceberg-go's add-snapshot update type is
// unexported.
func OnlyOperation(t testing.TB, updates []table.Update) []table.Update {
	t.Helper()
	out := slices.Clone(updates)
	for i, u := range out {
		if u.Action() != table.UpdateAddSnapshot {
			continue
		}
		snap, err := catalog.AddedSnapshot(u)
		require.NoError(t, err)
		op := table.OpAppend
		if snap.Summary != nil {
			op = snap.Summary.Operation
		}
		snap.Summary = &table.Summary{Operation: op}
		out[i] = table.NewAddSnapshotUpdate(snap)
	}
	return out
}

// Commit commits txn's staged changes through cat (under txn's
// requirements) with OnlyOperation's summaries.
func Commit(t testing.TB, ctx context.Context, cat table.CatalogIO, ident table.Identifier, txn *table.Transaction) {
	t.Helper()
	staged, err := txn.TableCommit()
	require.NoError(t, err)
	_, _, err = cat.CommitTable(ctx, ident, staged.Requirements, OnlyOperation(t, staged.Updates))
	require.NoError(t, err)
}
