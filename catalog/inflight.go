package catalog

import (
	"strings"
	"sync"
)

// inflight counts, per data file, the holds of in-process writers that
// wrote the file but have not committed or dropped it yet (an ingest
// batch between its write and its commit). Orphan-file removal skips held
// files whatever their age, so a batch paused longer than the orphan
// cutoff is never deleted under its writer. It protects writers in this
// process only; across processes the age cutoff (at least 1 h) does.
type inflight struct {
	mu    sync.Mutex
	holds map[string]int
}

// HoldFiles marks files (data file locations) as written but not yet
// committed until the returned release is called (idempotent). Safe for
// concurrent use.
func (c *Catalog) HoldFiles(files []string) (release func()) {
	c.inflight.mu.Lock()
	defer c.inflight.mu.Unlock()
	if c.inflight.holds == nil {
		c.inflight.holds = map[string]int{}
	}
	keys := make([]string, len(files))
	for i, f := range files {
		keys[i] = fileKey(f)
		c.inflight.holds[keys[i]]++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			c.inflight.mu.Lock()
			defer c.inflight.mu.Unlock()
			for _, k := range keys {
				if c.inflight.holds[k]--; c.inflight.holds[k] <= 0 {
					delete(c.inflight.holds, k)
				}
			}
		})
	}
}

// FileHeld reports whether some in-process writer holds file (HoldFiles).
// A location and its file:// URI spelling are the same file.
func (c *Catalog) FileHeld(file string) bool {
	c.inflight.mu.Lock()
	defer c.inflight.mu.Unlock()
	return c.inflight.holds[fileKey(file)] > 0
}

// fileKey spells a local file one way: file:///p and /p are the same.
func fileKey(f string) string {
	if rest, ok := strings.CutPrefix(f, "file://"); ok {
		return rest
	}
	return f
}

// HoldFiles is Catalog.HoldFiles, for writers that only have the TableIO
// (ingest/sink finds it by type assertion).
func (t *TableIO) HoldFiles(files []string) (release func()) { return t.cat.HoldFiles(files) }
