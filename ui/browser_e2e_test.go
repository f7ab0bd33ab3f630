package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/spec"
)

// EnvScreenshots names the directory TestE2EConsoleBrowser writes its
// screenshots to; a temporary directory when unset.
// scripts/console-screenshots sets it to docs/img, the committed ones.
const EnvScreenshots = "TARN_UI_SCREENSHOTS"

// chromium finds Debian's chromium (scripts/chromium.sh installs it);
// missing, the test skips, and fails under CI=true.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "the console's browser test needs chromium on PATH (scripts/chromium.sh installs it)")
	return ""
}

// TestE2EConsoleBrowser drives the console in a real headless Chromium
// against Tarn in process with a Kafka (kfake) that a producer keeps
// feeding: the topics list shows the topic syncing, with lag, and its
// rows rising as the page refreshes itself; a record with an
// incompatible schema suspends the topic and its page shows why;
// resuming from the page in error mode skip (through the confirmation
// dialog) brings it back to syncing; the table page's snapshots and
// schema are the REST API's; the keyboard reaches everything (skip link,
// snippet tabs with arrow keys); every form control has a label and all
// text has 4.5:1 contrast; and no page logs a console error (a CSP
// violation included). Screenshots of each page go to EnvScreenshots.
func TestE2EConsoleBrowser(t *testing.T) {
	b := newChrome(t)
	ctx, shot, eval, poll, a11y := b.ctx, b.shot, b.eval, b.poll, b.a11y

	f := newFixture(t, false)
	f.enable(t)
	stop := f.keepProducing(t, 40*time.Millisecond)

	// Topics: syncing, lag known, rows rising while the page refreshes
	// itself (no navigation).
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(f.url+"/ui/topics"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="flights"] .state-syncing`))))
	poll("rows", `Number(document.querySelector('tr[data-topic="flights"] [data-field=rows]').dataset.value) > 0`)
	first, err := strconv.Atoi(eval(`document.querySelector('tr[data-topic="flights"] [data-field=rows]').dataset.value`))
	require.NoError(t, err)
	poll("rows to rise", fmt.Sprintf(`Number(document.querySelector('tr[data-topic="flights"] [data-field=rows]').dataset.value) > %d`, first))
	poll("rows/s", `/^[0-9.]+$/.test(document.querySelector('tr[data-topic="flights"] [data-field=rows-per-second]').textContent.trim())`)
	assert.Regexp(t, `^[0-9  ]+$`, eval(`document.querySelector('tr[data-topic="flights"] [data-field=lag-records]').textContent.trim()`))
	a11y("topics")
	shot("console-topics.png")
	// The first Tab reaches the skip link.
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("\t")))
	assert.Equal(t, "Skip to content", eval(`document.activeElement.textContent`))

	// A record with an incompatible schema suspends the topic; its page
	// (refreshing itself) shows why.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(f.url+"/ui/topics/flights"), chromedp.WaitVisible(chromedp.CSS(`[data-field=rows]`))))
	a11y("topic")
	shot("console-topic.png")
	f.produceIncompatible(t, 0)
	poll("the reason", `(document.querySelector('[data-field=reason]') || {textContent: ""}).textContent.includes("incompatible")`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#resume-mode`))))
	a11y("suspended topic")
	shot("console-topic-suspended.png")

	// Resume in skip mode: the dialog asks, Cancel changes nothing,
	// Confirm resumes.
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#resume-mode`), "skip"),
		chromedp.Click(chromedp.CSS(`form[action$="/resume"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`dialog[open]`))))
	assert.Equal(t, "Resume topic flights with error mode skip?", eval(`document.querySelector('dialog[open] h2').textContent`))
	assert.Equal(t, "Cancel", eval(`document.activeElement.textContent`), "the dialog focuses Cancel")
	shot("console-confirm.png")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`dialog[open] button[data-action=confirm]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash.ok`))))
	assert.Equal(t, "Resumed: the topic is starting again.", eval(`document.querySelector('.flash.ok').textContent`))
	poll("syncing again", `document.querySelector('h1 [data-field=state]').textContent === "syncing"`)
	st := f.waitTopic(t, func(st topics.Status) bool { return st.State == topics.StateSyncing })
	assert.Equal(t, "skip", st.Config.ErrorMode)
	assert.EqualValues(t, 1, st.Errors["incompatible_schema"])

	// The table page against loadTable, once ingest has caught up.
	stop()
	f.waitTopic(t, func(st topics.Status) bool {
		return st.LagRecords != nil && *st.LagRecords == 0 && st.BufferedRows == 0
	})
	// Maintenance runs on the table first: its page shows each job's run.
	flights := catalog.Ident{Namespace: catalog.Namespace{"demo"}, Name: "flights"}
	_, err = f.maint.RunJobs(ctx, flights, []string{maintenance.JobCompact, maintenance.JobExpire})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(f.url+"/ui/namespaces/demo/tables/flights"), chromedp.WaitVisible(chromedp.CSS(`#snapshots`))))
	assert.Equal(t, "compact,expire", eval(`Array.from(document.querySelectorAll('#maintenance [data-job]')).map(e => e.dataset.job).join(",")`))
	assert.Equal(t, "off", eval(`document.querySelector('#formats [data-field=delta-enabled]').textContent`))
	assert.NotEmpty(t, eval(`document.querySelector('#formats [data-target=lake] [data-field=publish-state]').textContent`), "the publish target's state")
	var res spec.LoadTableResult
	require.Equal(t, http.StatusOK, f.api(t, http.MethodGet, "/v1/namespaces/demo/tables/flights", "", &res))
	md, err := table.ParseMetadataBytes(res.Metadata)
	require.NoError(t, err)
	var want []string
	for _, s := range slices.Backward(md.Snapshots()) {
		want = append(want, strconv.FormatInt(s.SnapshotID, 10))
	}
	got := eval(`Array.from(document.querySelectorAll('[data-snapshot-id]')).map(e => e.dataset.snapshotId).join(",")`)
	assert.Equal(t, joinComma(want), got, "the page's snapshots are loadTable's, newest first")
	var ids []string
	for _, id := range fieldIDs(t, md.CurrentSchema()) {
		ids = append(ids, strconv.Itoa(id))
	}
	assert.Equal(t, joinComma(ids), eval(`Array.from(document.querySelectorAll('#schema [data-field-id]')).map(e => Number(e.dataset.fieldId)).sort((a, b) => a - b).join(",")`))
	a11y("table")
	// The snippet tabs follow the keyboard.
	require.NoError(t, chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(`#tab-python`)), chromedp.KeyEvent(kb.ArrowRight)))
	assert.Equal(t, "Spark", eval(`document.activeElement.textContent`))
	assert.Equal(t, "false", eval(`String(document.getElementById("snip-sh").hidden)`))
	assert.Equal(t, "true", eval(`String(document.getElementById("snip-python").hidden)`))
	shot("console-table.png")

	// A level holding a dot is one box, unlike two levels.
	require.NoError(t, f.cat.CreateNamespace(ctx, catalog.Namespace{"demo.eu"}, nil))
	require.NoError(t, f.cat.CreateNamespace(ctx, catalog.Namespace{"demo", "eu"}, nil))
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(f.url+"/ui/catalog"), chromedp.WaitVisible(chromedp.CSS(`.ns-list`))))
	assert.Equal(t, "demo;demo|eu;demo.eu", eval(`Array.from(document.querySelectorAll('.ns h2')).map(h => Array.from(h.querySelectorAll('.lvl')).map(l => l.textContent).join("|")).join(";")`))
	a11y("catalog")
	shot("console-catalog.png")
}

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}

// keepProducing produces a record every interval, round robin over the
// partitions, until the returned stop is called (or the test ends).
func (f *fixture) keepProducing(t *testing.T, every time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := f.prod.ProduceSync(ctx, kgoRecord(f.values[i%len(f.values)], int32(i%3))).FirstErr(); err != nil && ctx.Err() == nil {
				t.Errorf("produce: %v", err)
				return
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// unlabelledJS lists the visible form controls with no label (a
// <label for>, a wrapping label, aria-label or aria-labelledby).
const unlabelledJS = `Array.from(document.querySelectorAll("input:not([type=hidden]), select, textarea"))
  .filter(e => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby"))
  .map(e => e.outerHTML).join("\n")`

// lowContrastJS lists the elements whose own text has less than WCAG's
// 4.5:1 contrast (relative luminance, WCAG 2.2 §1.4.3) against the
// first opaque background behind them.
const lowContrastJS = `(() => {
  const rgb = s => { const m = s.match(/[\d.]+/g).map(Number); return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; };
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const bg = e => { for (; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.a >= 1) return c; } return {r: 255, g: 255, b: 255, a: 1}; };
  const bad = [];
  for (const e of document.querySelectorAll("body *")) {
    if (!Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    const st = getComputedStyle(e);
    if (st.visibility === "hidden" || st.display === "none" || e.offsetParent === null && st.position !== "fixed") continue;
    const fg = rgb(st.color), b = bg(e);
    const l1 = lum(fg), l2 = lum(b);
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    if (ratio < 4.5) bad.push(e.tagName + "." + e.className + " '" + e.textContent.trim().slice(0, 30) + "' " + ratio.toFixed(2));
  }
  return bad.join("\n");
})()`
