package catalog_test

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/spec"
)

// Regression: a transaction entry that only asserted requirements (no
// updates) was checked while staging but left out of the final
// compare-and-swap, so a commit to that table landing between the check and
// the swap went unnoticed and the transaction succeeded on a stale premise.
func TestTransactionRequirementOnlyEntryIsPartOfTheSwap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cat, wh, rs, guarded, _ := newRacingCatalog(t)
	other := catalog.Ident{Namespace: catalog.Namespace{"ns"}, Name: "other"}
	_, err := cat.CreateTable(ctx, wh, other.Namespace, spec.CreateTableRequest{
		Name:   other.Name,
		Schema: iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}),
	})
	require.NoError(t, err)

	// The guarded table's current schema id is 0; assert it, change nothing.
	guardedBefore, err := cat.LoadTable(ctx, wh, guarded)
	require.NoError(t, err)
	otherBefore, err := cat.LoadTable(ctx, wh, other)
	require.NoError(t, err)

	// Every attempt loses to a commit that changes the guarded table's
	// current schema, so the assertion no longer holds when re-checked.
	schemaID := 0
	var race func()
	race = func() {
		schemaID++
		sc := iceberg.NewSchema(schemaID, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
			iceberg.NestedField{ID: 1 + schemaID, Name: "c" + uuid.NewString()[:8], Type: iceberg.PrimitiveTypes.Int64})
		_, err := cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: guarded, Updates: []table.Update{
			table.NewAddSchemaUpdate(sc), table.NewSetCurrentSchemaUpdate(-1),
		}})
		require.NoError(t, err)
	}
	rs.before = race

	err = cat.CommitTransaction(ctx, wh, []catalog.TableCommit{
		{Ident: guarded, Requirements: []table.Requirement{table.AssertCurrentSchemaID(0)}},
		{Ident: other, Updates: []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})}},
	})
	require.ErrorIs(t, err, catalog.ErrCommitFailed)

	otherAfter, err := cat.LoadTable(ctx, wh, other)
	require.NoError(t, err)
	require.Equal(t, otherBefore.MetadataLocation, otherAfter.MetadataLocation, "the other table must not change")
	guardedAfter, err := cat.LoadTable(ctx, wh, guarded)
	require.NoError(t, err)
	require.NotEqual(t, guardedBefore.MetadataLocation, guardedAfter.MetadataLocation, "the racing commit landed")
}
