package bolt_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
)

// TestRecords: put, get, list and delete records in two collections, and
// the records survive a reopen.
func TestRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := t.Context()
	s := openStore(t, dir)

	got, err := s.ListRecords(ctx, "topics")
	require.NoError(t, err)
	assert.Empty(t, got, "a collection never written is empty")
	_, ok, err := s.GetRecord(ctx, "topics", "orders")
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, s.DeleteRecord(ctx, "topics", "orders"), "deleting a missing record is not an error")

	require.NoError(t, s.PutRecord(ctx, "topics", "orders", []byte(`{"v":1}`)))
	require.NoError(t, s.PutRecord(ctx, "topics", "orders", []byte(`{"v":2}`)))
	require.NoError(t, s.PutRecord(ctx, "topics", "clicks", []byte(`{"v":3}`)))
	require.NoError(t, s.PutRecord(ctx, "other", "orders", []byte(`x`)))
	// bbolt cannot store an empty name: refused as the caller's error.
	require.ErrorIs(t, s.PutRecord(ctx, "topics", "", []byte(`x`)), catalog.ErrInvalidArgument)
	require.ErrorIs(t, s.PutRecord(ctx, "", "k", []byte(`x`)), catalog.ErrInvalidArgument)
	_, _, err = s.GetRecord(ctx, "", "k")
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
	_, err = s.ListRecords(ctx, "")
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
	require.ErrorIs(t, s.DeleteRecord(ctx, "topics", ""), catalog.ErrInvalidArgument)
	require.NoError(t, s.Close())

	s = openStore(t, dir)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	v, ok, err := s.GetRecord(ctx, "topics", "orders")
	require.NoError(t, err)
	require.True(t, ok)
	assert.JSONEq(t, `{"v":2}`, string(v))
	got, err = s.ListRecords(ctx, "topics")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"orders": []byte(`{"v":2}`), "clicks": []byte(`{"v":3}`)}, got)

	require.NoError(t, s.DeleteRecord(ctx, "topics", "orders"))
	_, ok, err = s.GetRecord(ctx, "topics", "orders")
	require.NoError(t, err)
	assert.False(t, ok)
	v, ok, err = s.GetRecord(ctx, "other", "orders")
	require.NoError(t, err)
	assert.True(t, ok, "collections are separate")
	assert.Equal(t, "x", string(v))
}
