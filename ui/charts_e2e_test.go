package ui_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestE2EConsoleCharts opens a topic's page in a real headless Chromium
// while the demo's records keep flowing: its charts of lag, rows/s and
// commit latency fill from the server's in-memory history as the page
// refreshes itself — each series gains points, rows/s is above zero and
// a commit took a measurable time — drawn as inline SVG (no script
// library, no CDN: the page's CSP allows only the console's own files,
// and the test fails on any console error).
func TestE2EConsoleCharts(t *testing.T) {
	b := newChrome(t)
	f := newFixture(t, false)
	f.enable(t)
	f.keepProducing(t, 40*time.Millisecond)

	b.do(chromedp.Navigate(f.url+"/ui/topics/flights"), chromedp.WaitVisible(chromedp.CSS(`#charts`)))
	points := func(id string) int {
		t.Helper()
		n, err := strconv.Atoi(b.eval(fmt.Sprintf(`document.querySelector('[data-series=%s]').dataset.points`, id)))
		require.NoError(t, err)
		return n
	}
	// Two rates (three samples, 5 s apart) on the page.
	b.poll("rows/s points", `Number(document.querySelector('[data-series=chart-rows-per-second]').dataset.points) >= 2`)
	first := map[string]int{}
	for _, id := range []string{"chart-lag-records", "chart-rows-per-second", "chart-commit-seconds"} {
		first[id] = points(id)
		assert.Positive(t, first[id], id)
		b.poll(id+" to gain points", fmt.Sprintf(`Number(document.querySelector('[data-series=%s]').dataset.points) > %d`, id, first[id]))
	}
	b.poll("rows/s above zero", `Number(document.querySelector('[data-series=chart-rows-per-second]').dataset.last) > 0`)
	rate, err := strconv.ParseFloat(b.eval(`document.querySelector('[data-series=chart-rows-per-second]').dataset.last`), 64)
	require.NoError(t, err)
	assert.Less(t, rate, 100.0, "the producer sends 25 records/s")
	assert.Regexp(t, `^[0-9.]+ (s|min)`, b.eval(`document.querySelector('[data-series=chart-commit-seconds]').dataset.last`))
	// The line is drawn: as many polyline points as samples, inside the
	// viewBox.
	n := b.eval(`(() => { const f = document.querySelector('[data-series=chart-rows-per-second]'); const p = f.querySelector('polyline').points; for (const q of p) { if (q.x < 0 || q.x > 600 || q.y < 0 || q.y > 120) return "outside " + q.x + "," + q.y; } return String(p.numberOfItems) + "/" + f.dataset.points; })()`)
	assert.Regexp(t, `^(\d+)/(\d+)$`, n)
	var a, c int
	_, err = fmt.Sscanf(n, "%d/%d", &a, &c)
	require.NoError(t, err, n)
	assert.Equal(t, c, a)
	assert.Contains(t, b.eval(`document.querySelector('[data-series=chart-rows-per-second] svg').getAttribute('aria-label')`), "Rows/s over the last")
	b.a11y("topic with charts")
	b.shot("console-topic-charts.png")
}
