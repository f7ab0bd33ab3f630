package catalog

import (
	"context"
	"errors"
	"sync"
	"time"
)

// stagedTTL is how long a stage-create's directories stay signable
// before the table is committed: longer than any CREATE TABLE AS SELECT
// an engine writes between staging and committing.
const stagedTTL = 6 * time.Hour

// stagedTables remembers, in this process, the directories of tables
// staged (createTable with stage-create) but not committed yet. An
// engine writes a staged table's data files before its create commit
// (Spark's CREATE TABLE AS SELECT) and, with remote signing, has them
// signed through the table's /sign route, which must then know where the
// table's files will go. The directories were checked when staged (in
// the warehouse, no reserved characters, no overlap with a recorded
// table); the create commit checks them again, atomically.
type stagedTables struct {
	mu sync.Mutex
	m  map[string]stagedTable
}

type stagedTable struct {
	dirs  []string
	until time.Time
}

// remember records id's staged directories, dropping expired entries.
func (s *stagedTables) remember(id Ident, dirs []string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]stagedTable{}
	}
	for k, v := range s.m {
		if now.After(v.until) {
			delete(s.m, k)
		}
	}
	s.m[id.String()] = stagedTable{dirs: dirs, until: now.Add(stagedTTL)}
}

// lookup returns id's staged directories if it was staged within stagedTTL.
func (s *stagedTables) lookup(id Ident, now time.Time) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[id.String()]
	if !ok || now.After(v.until) {
		return nil, false
	}
	return v.dirs, true
}

// TableDirectories returns the directories of a table's files
// (Loaded.Directories) for vending and signing; for a table staged in
// this process and not committed yet, those it was staged with. Errors
// as LoadTable.
func (c *Catalog) TableDirectories(ctx context.Context, wh *Warehouse, id Ident) ([]string, error) {
	lt, err := c.LoadTable(ctx, wh, id)
	if errors.Is(err, ErrNoSuchTable) {
		if dirs, ok := c.staged.lookup(id, time.Now()); ok {
			return dirs, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return lt.Directories()
}
