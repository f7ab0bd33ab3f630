package catalog

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"
)

// stagedTTL is how long a stage-create's directories stay signable
// before the table is committed: longer than any CREATE TABLE AS SELECT
// an engine writes between staging and committing.
const stagedTTL = 6 * time.Hour

// maxStaged bounds the staged tables remembered; past it the oldest is
// forgotten (its engine then gets 404 from /sign until it commits).
const maxStaged = 10_000

// stagedTables remembers, in this process, the directories of tables
// staged (createTable with stage-create) but not committed yet. An
// engine writes a staged table's data files before its create commit
// (Spark's CREATE TABLE AS SELECT) and, with remote signing, has them
// signed through the table's /sign route, which must then know where the
// table's files will go. The directories were checked when staged (in
// the warehouse, no reserved characters, no overlap with a recorded
// table); TableDirectories checks again, on every use, that no recorded
// table overlaps them, so an entry stops working as soon as the table is
// committed (and perhaps renamed) or another table takes the directory;
// the create commit itself is checked atomically by the store.
type stagedTables struct {
	mu sync.Mutex
	m  map[string]stagedTable
}

type stagedTable struct {
	dirs  []string
	until time.Time
}

// stagedKey is one table of one warehouse: the warehouse's name, the
// namespace levels and the name, joined by a separator no level or name
// holds (Ident.String's dots would make ["a.b"].t and ["a"]."b.t" one).
func stagedKey(wh *Warehouse, id Ident) string {
	return wh.Name + "\x00" + strings.Join(id.Namespace, "\x1f") + "\x00" + id.Name
}

// remember records id's staged directories, dropping expired entries
// and, past maxStaged, the oldest.
func (s *stagedTables) remember(wh *Warehouse, id Ident, dirs []string, now time.Time) {
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
	if len(s.m) >= maxStaged {
		keys := make([]string, 0, len(s.m))
		for k := range s.m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return s.m[keys[i]].until.Before(s.m[keys[j]].until) })
		for _, k := range keys[:len(s.m)-maxStaged+1] {
			delete(s.m, k)
		}
	}
	s.m[stagedKey(wh, id)] = stagedTable{dirs: dirs, until: now.Add(stagedTTL)}
}

// lookup returns id's staged directories if it was staged within stagedTTL.
func (s *stagedTables) lookup(wh *Warehouse, id Ident, now time.Time) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[stagedKey(wh, id)]
	if !ok || now.After(v.until) {
		return nil, false
	}
	return v.dirs, true
}

// forget drops id's staged entry (its create committed).
func (s *stagedTables) forget(wh *Warehouse, id Ident) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, stagedKey(wh, id))
}

// TableDirectories returns the directories of a table's files
// (Loaded.Directories) for vending and signing; for a table staged in
// this process and not committed yet, those it was staged with, as long
// as no recorded table or view overlaps them. Errors as LoadTable.
func (c *Catalog) TableDirectories(ctx context.Context, wh *Warehouse, id Ident) ([]string, error) {
	lt, err := c.LoadTable(ctx, wh, id)
	if errors.Is(err, ErrNoSuchTable) {
		if dirs, ok := c.staged.lookup(wh, id, time.Now()); ok {
			_, taken, ferr := c.findPointer(ctx, Ident{}, func(p Pointer) bool { return LocationsOverlap(dirs, PointerLocations(p)) })
			if ferr != nil {
				return nil, ferr
			}
			if !taken {
				return dirs, nil
			}
			c.staged.forget(wh, id)
		}
	}
	if err != nil {
		return nil, err
	}
	return lt.Directories()
}
