package topics_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/connecttest"
)

// TestEnableConnectJSON: a connect-json topic is enabled without a
// registered schema (its values carry theirs): the table starts with the
// _kafka column alone and takes its columns from the first record; a
// declared schema or a user-column partition field is refused at enable.
func TestEnableConnectJSON(t *testing.T) {
	e := newEnv(t)
	st := e.enable(func(c *topics.TopicConfig) { c.Format = "connect-json" })
	assert.Equal(t, "connect-json", st.Config.Format)
	require.Len(t, e.loadTable().Schema().Fields(), 1, "only _kafka")

	for _, v := range connecttest.JSON(t, false) {
		e.produceRaw(0, v)
	}
	e.waitRows(2)
	sc := e.loadTable().Schema()
	assert.Len(t, sc.Fields(), len(connecttest.Columns)+1)
	f, ok := sc.FindFieldByName("dbz_micro_timestamp")
	require.True(t, ok)
	assert.Equal(t, "timestamp", f.Type.String())
	st, err := e.m.Get(e.ctx, testTopic)
	require.NoError(t, err)
	assert.Empty(t, st.Errors)

	_, err = e.m.Enable(e.ctx, topics.TopicConfig{Topic: "other", Table: "ns.other", Format: "connect-json", Schema: []byte(filmsSchema)})
	require.ErrorIs(t, err, topics.ErrInvalid)
	created, err := kadm.NewClient(e.prod).CreateTopic(e.ctx, 1, 1, nil, "other")
	require.NoError(t, err)
	require.NoError(t, created.Err)
	_, err = e.m.Enable(e.ctx, topics.TopicConfig{Topic: "other", Table: "ns.other", Format: "connect-json", PartitionSpec: []string{"identity(id)"}})
	require.ErrorIs(t, err, topics.ErrInvalid, "no column id yet")
	assert.Contains(t, err.Error(), "id")
}
