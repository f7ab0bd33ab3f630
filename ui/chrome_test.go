package ui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testenv"
)

// chrome is a headless Chromium driven by chromedp for the console's
// browser tests: it collects console errors (a CSP violation included),
// writes screenshots to EnvScreenshots (a temporary directory when
// unset), and its helpers fail the test.
type chrome struct {
	t     *testing.T
	ctx   context.Context
	shots string

	mu       sync.Mutex
	problems []string
}

// newChrome starts Chromium (skipping unless TARN_E2E is set, failing
// under CI=true without Chromium); at the test's end it asserts that no
// page logged a console error.
func newChrome(t *testing.T) *chrome {
	t.Helper()
	testenv.E2E(t, "a headless Chromium")
	exe := chromium(t)
	shots := os.Getenv(EnvScreenshots)
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1360, 860))...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelT)
	require.NoError(t, chromedp.Do(ctx)) // start the browser
	c := &chrome{t: t, ctx: ctx, shots: shots}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				c.mu.Lock()
				c.problems = append(c.problems, fmt.Sprintf("%s:%d %s", m.URL, m.Line+1, m.Text))
				c.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		time.Sleep(200 * time.Millisecond) // let the last console messages arrive
		c.mu.Lock()
		defer c.mu.Unlock()
		assert.Empty(t, c.problems, "console errors")
	})
	return c
}

// do runs actions.
func (c *chrome) do(actions ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	require.NoError(c.t, chromedp.Do(c.ctx, actions...))
}

// shot takes the whole page, from the top (a full-page capture of a
// scrolled page draws the sticky header in the middle); a dialog's
// shot ("confirm" in its name) takes the viewport.
func (c *chrome) shot(name string) {
	c.t.Helper()
	capture := chromedp.CaptureScreenshot()
	if !strings.Contains(name, "confirm") {
		_, err := chromedp.Run(c.ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
		require.NoError(c.t, err)
		capture = chromedp.FullScreenshot(100)
	}
	png, err := chromedp.Run(c.ctx, capture)
	require.NoError(c.t, err)
	require.NoError(c.t, os.WriteFile(filepath.Join(c.shots, name), png, 0o644))
}

// eval is the string js evaluates to.
func (c *chrome) eval(js string) string {
	c.t.Helper()
	v, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](js))
	require.NoError(c.t, err, js)
	return v
}

// poll waits (up to 40 s) until js is truthy.
func (c *chrome) poll(what, js string) {
	c.t.Helper()
	_, err := chromedp.Run(c.ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(40*time.Second), chromedp.WithPollingInterval(200*time.Millisecond)))
	require.NoError(c.t, err, "waiting for %s", what)
}

// a11y checks the page's form labels and text contrast.
func (c *chrome) a11y(page string) {
	c.t.Helper()
	assert.Equal(c.t, "", c.eval(unlabelledJS), "%s: form controls without a label", page)
	assert.Equal(c.t, "", c.eval(lowContrastJS), "%s: text below 4.5:1 contrast", page)
}
