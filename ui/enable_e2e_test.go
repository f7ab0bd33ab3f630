package ui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"

	"github.com/tarnhq/tarn/ingest/topics"
)

// TestE2EConsoleEnable enables a topic from the console in a real
// headless Chromium: the topics page links the form, which lists the
// broker's topics with the format detected from the registry; a table
// name, the mode and Enable ask in a dialog, and Confirm sends the
// management API's enable and shows the topic syncing with its rows
// rising.
func TestE2EConsoleEnable(t *testing.T) {
	b := newChrome(t)
	f := newFixture(t, false)
	f.keepProducing(t, 40*time.Millisecond)

	b.do(chromedp.Navigate(f.url+"/ui/topics"), chromedp.WaitVisible(chromedp.CSS(`#enable-link`)))
	b.do(chromedp.Click(chromedp.CSS(`#enable-link`)), chromedp.WaitVisible(chromedp.CSS(`#enable-topic`)))
	assert.Equal(t, "avro", b.eval(`document.querySelector('#enable-topic option[value=flights]').dataset.format`), "the format the registry holds")
	assert.Contains(t, b.eval(`document.querySelector('#enable-topic option[value=flights]').textContent`), "3 partitions")
	b.a11y("enable")
	b.do(chromedp.SetValue(chromedp.CSS(`#enable-topic`), "flights"),
		chromedp.SendKeys(chromedp.CSS(`#enable-table`), "demo.flights"),
		chromedp.SetValue(chromedp.CSS(`#enable-mode`), "append"))
	b.shot("console-enable.png")
	b.do(chromedp.Click(chromedp.CSS(`form[action="/ui/enable"] button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`dialog[open]`)))
	assert.Equal(t, "Enable topic flights into table demo.flights (format auto, mode append)?", b.eval(`document.querySelector('dialog[open] h2').textContent`))
	assert.Equal(t, "Cancel", b.eval(`document.activeElement.textContent`), "the dialog focuses Cancel")
	b.do(chromedp.Click(chromedp.CSS(`dialog[open] button[data-action=confirm]`)), chromedp.WaitVisible(chromedp.CSS(`.flash.ok`)))
	assert.Equal(t, "Enabled: the table is created and the topic starts syncing.", b.eval(`document.querySelector('.flash.ok').textContent`))
	b.poll("syncing", `document.querySelector('h1 [data-field=state]').textContent === "syncing"`)
	b.poll("rows", `Number(document.querySelector('[data-field=rows]').dataset.value) > 0`)
	st := f.waitTopic(t, func(st topics.Status) bool { return st.State == topics.StateSyncing && st.Rows > 0 })
	assert.Equal(t, "demo.flights", st.Table)
	assert.Equal(t, "avro", st.Config.Format, "auto resolved from the registry")
	assert.Equal(t, "append", st.Config.Mode)

	// Enabled, the topic is no longer offered.
	b.do(chromedp.Navigate(f.url+"/ui/enable"), chromedp.WaitVisible(chromedp.CSS(`#enable-topic`)))
	assert.Equal(t, "true", b.eval(`String(document.querySelector('#enable-topic option[value=flights]').disabled)`))
}
