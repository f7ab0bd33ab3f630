package topics_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
)

// TestDeltaOption: "delta": true on enable sets the table's
// tarn.delta.enabled (what the Delta publisher follows), PATCH
// "delta": false turns it off again and ingest goes on; a topic enabled
// without the option leaves the property unset.
func TestDeltaOption(t *testing.T) {
	e := newEnv(t)
	on := true
	st := e.enable(func(c *topics.TopicConfig) { c.Delta = &on })
	require.Equal(t, &on, st.Config.Delta)
	require.Equal(t, "true", e.loadTable().Properties()[catalog.PropDeltaEnabled])
	e.waitRows(int64(e.produce(30)))

	off := false
	st, err := e.m.Update(e.ctx, testTopic, topics.Patch{Delta: &off})
	require.NoError(t, err)
	require.Equal(t, &off, st.Config.Delta)
	require.Equal(t, "false", e.loadTable().Properties()[catalog.PropDeltaEnabled])
	e.waitRows(int64(e.produce(30)))
}

// TestDeltaOptionAbsent: enabling without "delta" sets no property.
func TestDeltaOptionAbsent(t *testing.T) {
	e := newEnv(t)
	e.enable(nil)
	_, ok := e.loadTable().Properties()[catalog.PropDeltaEnabled]
	require.False(t, ok)
}
