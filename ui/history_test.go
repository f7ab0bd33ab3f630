package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/topics"
)

// TestHistoryIsBoundedAndCharted: two hours of samples every 5 s keep
// the last hour (plus the one that spans it), a topic no longer listed
// is forgotten, and the charts hold every sample, rows/s between them.
func TestHistoryIsBoundedAndCharted(t *testing.T) {
	h := newHistory()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lag := int64(7)
	took := 0.25
	var now time.Time
	for i := range 2 * 720 {
		now = t0.Add(time.Duration(i) * 5 * time.Second)
		h.sample(now, []topics.Status{
			{Topic: "a", Rows: int64(i) * 50, LagRecords: &lag, LastCommitSeconds: &took},
			{Topic: "b"},
		})
	}
	s := h.of("a")
	require.Len(t, s, 721, "an hour at 5 s, both ends")
	assert.Equal(t, now.Add(-time.Hour), s[0].at, "the oldest spans the hour")
	cs := charts(now, s)
	byID := map[string]chart{}
	for _, c := range cs {
		byID[c.ID] = c
	}
	assert.Equal(t, 721, byID["chart-lag-records"].N)
	assert.Equal(t, "7", byID["chart-lag-records"].Last)
	assert.Equal(t, 0, byID["chart-lag-seconds"].N, "lag in seconds not known")
	assert.Equal(t, 720, byID["chart-rows-per-second"].N)
	assert.Equal(t, "10.0", byID["chart-rows-per-second"].Last)
	assert.Equal(t, "0.3 s", byID["chart-commit-seconds"].Last)
	assert.Equal(t, "1 h", byID["chart-rows-per-second"].Span)
	for _, p := range strings.Fields(byID["chart-rows-per-second"].Points) {
		var x, y float64
		_, err := fmt.Sscanf(p, "%g,%g", &x, &y)
		require.NoError(t, err)
		assert.True(t, x >= 0 && x <= chartW && y >= 0 && y <= chartH, p)
	}
	v, ok := h.perSecond(now.Add(5*time.Second), topics.Status{Topic: "a", Rows: int64(2*720) * 50})
	require.True(t, ok)
	assert.InDelta(t, 10, v, 0.01)

	h.sample(now.Add(5*time.Second), []topics.Status{{Topic: "b"}})
	assert.Empty(t, h.of("a"), "a topic no longer listed is forgotten")
}
