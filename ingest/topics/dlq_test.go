package topics_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/spec"
)

var dlqIdent = catalog.Ident{Namespace: tableIdent.Namespace, Name: tableIdent.Name + "_dlq"}

// tableExists reports whether table id exists.
func (e *env) tableExists(id catalog.Ident) bool {
	e.t.Helper()
	ok, err := e.cat.TableExists(e.ctx, id)
	require.NoError(e.t, err)
	return ok
}

// TestEnableRefusesForeignDLQ pins a trial failure: the topic was
// disabled, its table dropped (which forgets the topic and leaves
// air.flights_dlq an ordinary table), and the topic enabled again in
// error mode dlq. The enable took the old dead letter table over; its
// stored offsets made the new pipeline drop bad records as "already
// written", so they reached neither table. Now the enable is refused
// with 409 (ErrDLQTaken, a catalog.ErrConflict) naming the table, in any
// error mode, and creates nothing; once the old table is dropped the
// enable goes through. A user's table of that name is refused the same
// way (it was a 400 "no _kafka column").
func TestEnableRefusesForeignDLQ(t *testing.T) {
	e := newEnv(t)
	e.enable(func(c *topics.TopicConfig) { c.ErrorMode = "dlq" })
	require.True(t, e.tableExists(dlqIdent), "enable in mode dlq creates the dead letter table")
	e.produce(6)
	e.produceRaw(0, []byte("not avro"))
	e.waitRows(6)
	e.eventually("bad record counted", func() bool {
		st, err := e.m.Get(e.ctx, testTopic)
		require.NoError(t, err)
		return st.Errors["bad_header"] == 1
	})
	require.NoError(t, e.m.Disable(e.ctx, testTopic, false))
	require.NoError(t, e.cat.DropTable(e.ctx, e.wh, tableIdent, true))
	_, err := e.m.Get(e.ctx, testTopic)
	require.ErrorIs(t, err, topics.ErrNoSuchTopic, "dropping the table forgot the topic")

	for _, mode := range []string{"dlq", "suspend", "skip"} {
		t.Run(mode, func(t *testing.T) {
			_, err := e.m.Enable(e.ctx, topics.TopicConfig{Topic: testTopic, Table: testTable, ErrorMode: mode})
			require.ErrorIs(t, err, topics.ErrDLQTaken)
			require.ErrorIs(t, err, catalog.ErrConflict)
			assert.Equal(t, "table air.flights_dlq already exists and is not the dead letter table of topic "+testTopic+
				" (Tarn would write the topic's bad records into it); drop it or rename it, then try again", err.Error())
			assert.False(t, e.tableExists(tableIdent), "nothing created")
			assert.Empty(t, e.m.List(e.ctx))
			records, err := e.store.ListRecords(e.ctx, "topics")
			require.NoError(t, err)
			assert.Empty(t, records)
		})
	}

	// A user's ordinary table of that name is refused the same way.
	require.NoError(t, e.cat.DropTable(e.ctx, e.wh, dlqIdent, true))
	_, err = e.cat.CreateTable(e.ctx, e.wh, dlqIdent.Namespace, spec.CreateTableRequest{Name: dlqIdent.Name, Schema: e.loadSchema(t)})
	require.NoError(t, err)
	_, err = e.m.Enable(e.ctx, topics.TopicConfig{Topic: testTopic, Table: testTable, ErrorMode: "dlq"})
	require.ErrorIs(t, err, topics.ErrDLQTaken)
	assert.False(t, e.tableExists(tableIdent))

	// Dropped, the name is free: the topic starts over with both tables,
	// the bad record in the dead letter table.
	require.NoError(t, e.cat.DropTable(e.ctx, e.wh, dlqIdent, true))
	e.enable(func(c *topics.TopicConfig) { c.ErrorMode = "dlq" })
	e.waitRows(6)
	e.eventually("the bad record in the new dead letter table", func() bool {
		tbl, err := e.cat.TableIO(e.wh).LoadTable(e.ctx, []string{"air", "flights_dlq"})
		require.NoError(t, err)
		snap := tbl.CurrentSnapshot()
		return snap != nil && snap.Summary != nil && snap.Summary.Properties["total-records"] == "1"
	})

	// Re-enabling a disabled topic keeps its own dead letter table.
	require.NoError(t, e.m.Disable(e.ctx, testTopic, false))
	st := e.enable(func(c *topics.TopicConfig) { c.ErrorMode = "dlq" })
	assert.NotEqual(t, topics.StateDisabled, st.State)
}

// TestPatchToDLQRefusesForeignTable pins a trial failure: a topic whose
// <table>_dlq name held a user's table (made before names were reserved)
// was PATCHed to error mode dlq: 200, then the pipeline looped in failed
// on the table's shape. Now the PATCH is refused with 409 and changes
// nothing.
func TestPatchToDLQRefusesForeignTable(t *testing.T) {
	e := newEnv(t)
	e.enable(nil)
	// A table made under the name while nothing reserved it.
	e.stop()
	e.cat.SetOwners(nil)
	_, err := e.cat.CreateTable(e.ctx, e.wh, dlqIdent.Namespace, spec.CreateTableRequest{Name: dlqIdent.Name, Schema: e.loadSchema(t)})
	require.NoError(t, err)
	e.start()

	dlq := "dlq"
	_, err = e.m.Update(e.ctx, testTopic, topics.Patch{ErrorMode: &dlq})
	require.ErrorIs(t, err, topics.ErrDLQTaken)
	assert.Contains(t, err.Error(), "table air.flights_dlq already exists and is not the dead letter table of topic "+testTopic)
	st, err := e.m.Get(e.ctx, testTopic)
	require.NoError(t, err)
	assert.Equal(t, "suspend", st.Config.ErrorMode, "nothing changed")
	assert.NotEqual(t, topics.StateFailed, st.State)
}

// TestReservedNamesRefused pins a trial failure: a user could create a
// table (or rename one) into a name a topic reserves — its table or its
// dead letter table — and was then locked out of it (403, even for
// renaming it back). Now every create, register and rename into such a
// name is refused with 409 (AlreadyExists) naming the topic, and nothing
// changes; a PATCH to error mode dlq then creates the topic's own dead
// letter table.
func TestReservedNamesRefused(t *testing.T) {
	e := newEnv(t)
	e.enable(nil)
	require.NoError(t, e.cat.CreateNamespace(e.ctx, catalog.Namespace{"plain"}, nil))
	plain := catalog.Ident{Namespace: catalog.Namespace{"plain"}, Name: "t"}
	created, err := e.cat.CreateTable(e.ctx, e.wh, plain.Namespace, spec.CreateTableRequest{Name: plain.Name, Schema: e.loadSchema(t)})
	require.NoError(t, err)

	wantMsg := func(t *testing.T, err error, what string) {
		t.Helper()
		require.ErrorIs(t, err, catalog.ErrTableAlreadyExists)
		assert.Equal(t, "Cannot "+what+": the name is reserved by Tarn for Kafka topic "+testTopic+
			" (the topic's table or its dead letter table); choose another name, or release the topic first (DELETE /management/v1/topics/"+testTopic+"?release=true)",
			err.Error())
	}
	_, err = e.cat.CreateTable(e.ctx, e.wh, dlqIdent.Namespace, spec.CreateTableRequest{Name: dlqIdent.Name, Schema: e.loadSchema(t)})
	wantMsg(t, err, "create table air.flights_dlq")
	_, err = e.cat.CreateTable(e.ctx, e.wh, dlqIdent.Namespace, spec.CreateTableRequest{Name: dlqIdent.Name, Schema: e.loadSchema(t), StageCreate: true})
	wantMsg(t, err, "create table air.flights_dlq")
	wantMsg(t, e.cat.RenameTable(e.ctx, e.wh, plain, dlqIdent), "rename plain.t to air.flights_dlq")
	_, err = e.cat.RegisterTable(e.ctx, e.wh, dlqIdent.Namespace, spec.RegisterTableRequest{Name: dlqIdent.Name, MetadataLocation: created.MetadataLocation})
	wantMsg(t, err, "register table air.flights_dlq")
	wantMsg(t, e.cat.RenameView(e.ctx, e.wh, plain, dlqIdent), "rename plain.t to air.flights_dlq")
	assert.False(t, e.tableExists(dlqIdent), "nothing created")
	assert.True(t, e.tableExists(plain), "nothing renamed")
	require.NoError(t, e.cat.RenameTable(e.ctx, e.wh, plain, catalog.Ident{Namespace: plain.Namespace, Name: "u"}), "the user's table stays the user's")

	// A disabled topic keeps its names.
	require.NoError(t, e.m.Disable(e.ctx, testTopic, false))
	_, err = e.cat.CreateTable(e.ctx, e.wh, dlqIdent.Namespace, spec.CreateTableRequest{Name: dlqIdent.Name, Schema: e.loadSchema(t)})
	require.ErrorIs(t, err, catalog.ErrTableAlreadyExists)
	e.enable(nil)

	dlq := "dlq"
	st, err := e.m.Update(e.ctx, testTopic, topics.Patch{ErrorMode: &dlq})
	require.NoError(t, err)
	assert.Equal(t, "dlq", st.Config.ErrorMode)
	e.produceRaw(0, []byte("not avro"))
	e.eventually("the topic's own dead letter table", func() bool { return e.tableExists(dlqIdent) })
	e.waitState(topics.StateSyncing)

	// Released, the names are free again.
	require.NoError(t, e.m.Disable(e.ctx, testTopic, true))
	require.NoError(t, e.cat.RenameTable(e.ctx, e.wh, catalog.Ident{Namespace: plain.Namespace, Name: "u"}, catalog.Ident{Namespace: tableIdent.Namespace, Name: "flights_other"}))
}
