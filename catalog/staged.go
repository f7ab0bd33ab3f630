package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
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

// stagedCollection is the RecordStore collection of staged tables.
const stagedCollection = "staged-tables"

// stagedSweepInterval is how often a replica sweeps expired staged
// entries (and, past maxStaged, the oldest) out of the store, on a
// stage-create: often enough to keep the collection near maxStaged,
// seldom enough that a burst of stage-creates lists it once.
const stagedSweepInterval = time.Minute

// stagedTables remembers, in the catalog's RecordStore (so on every
// replica sharing it), the directories of tables staged (createTable
// with stage-create) but not committed yet. An engine writes a staged
// table's data files before its create commit (Spark's CREATE TABLE AS
// SELECT) and, with remote signing, has them signed through the table's
// /sign route, which must then know where the table's files will go —
// on whichever replica the request reaches. The directories were
// checked when staged (in the warehouse, no reserved characters, no
// overlap with a recorded table); TableDirectories checks again, on
// every use, that no recorded table overlaps them, so an entry stops
// working as soon as the table is committed (and perhaps renamed) or
// another table takes the directory; the create commit itself is
// checked atomically by the store.
type stagedTables struct {
	// rs is the store's RecordStore, or memRecords for a store without
	// one (a test's wrapper).
	rs RecordStore

	mu        sync.Mutex // guards lastSweep
	lastSweep time.Time
}

// stagedTable is a staged entry's record (JSON).
type stagedTable struct {
	Dirs []string `json:"dirs"`
	// UntilMillis is when the entry expires, Unix ms.
	UntilMillis int64 `json:"until-ms"`
}

// stagedKey is one table of one warehouse: the JSON array of the
// warehouse's name, the namespace levels and the name (unambiguous:
// ["a.b"].t and ["a"]."b.t" differ, and JSON holds no NUL, which
// PostgreSQL's text refuses).
func stagedKey(wh *Warehouse, id Ident) string {
	b, _ := json.Marshal([]any{wh.Name, []string(id.Namespace), id.Name})
	return string(b)
}

// remember records id's staged directories and, at most every
// stagedSweepInterval, drops expired entries and, past maxStaged, the
// oldest. Errors: the store's.
func (s *stagedTables) remember(ctx context.Context, wh *Warehouse, id Ident, dirs []string, now time.Time) error {
	if err := s.sweep(ctx, now); err != nil {
		return err
	}
	b, err := json.Marshal(stagedTable{Dirs: dirs, UntilMillis: now.Add(stagedTTL).UnixMilli()})
	if err != nil {
		return err
	}
	return s.rs.PutRecord(ctx, stagedCollection, stagedKey(wh, id), b)
}

// sweep drops expired entries and, past maxStaged-1, the oldest ones,
// unless this replica swept within stagedSweepInterval.
func (s *stagedTables) sweep(ctx context.Context, now time.Time) error {
	s.mu.Lock()
	due := now.Sub(s.lastSweep) >= stagedSweepInterval
	if due {
		s.lastSweep = now
	}
	s.mu.Unlock()
	if !due {
		return nil
	}
	recs, err := s.rs.ListRecords(ctx, stagedCollection)
	if err != nil {
		return err
	}
	type entry struct {
		key   string
		until int64
	}
	live := make([]entry, 0, len(recs))
	for k, v := range recs {
		var st stagedTable
		if json.Unmarshal(v, &st) != nil || now.UnixMilli() > st.UntilMillis {
			if err := s.rs.DeleteRecord(ctx, stagedCollection, k); err != nil {
				return err
			}
			continue
		}
		live = append(live, entry{k, st.UntilMillis})
	}
	if len(live) >= maxStaged {
		sort.Slice(live, func(i, j int) bool { return live[i].until < live[j].until })
		for _, e := range live[:len(live)-maxStaged+1] {
			if err := s.rs.DeleteRecord(ctx, stagedCollection, e.key); err != nil {
				return err
			}
		}
	}
	return nil
}

// lookup returns id's staged directories if it was staged within
// stagedTTL. Errors: the store's.
func (s *stagedTables) lookup(ctx context.Context, wh *Warehouse, id Ident, now time.Time) ([]string, bool, error) {
	b, ok, err := s.rs.GetRecord(ctx, stagedCollection, stagedKey(wh, id))
	if err != nil || !ok {
		return nil, false, err
	}
	var st stagedTable
	if err := json.Unmarshal(b, &st); err != nil || now.UnixMilli() > st.UntilMillis {
		return nil, false, nil
	}
	return st.Dirs, true, nil
}

// forget drops id's staged entry (its create committed, or it no longer
// may be signed). Errors: the store's.
func (s *stagedTables) forget(ctx context.Context, wh *Warehouse, id Ident) error {
	return s.rs.DeleteRecord(ctx, stagedCollection, stagedKey(wh, id))
}

// TableDirectories returns the directories of a table's files
// (Loaded.Directories) for vending and signing; for a table staged (on
// any replica sharing the store) and not committed yet, those it was
// staged with, as long as no recorded table or view overlaps them.
// Errors as LoadTable, and the store's.
func (c *Catalog) TableDirectories(ctx context.Context, wh *Warehouse, id Ident) ([]string, error) {
	lt, err := c.LoadTable(ctx, wh, id)
	if errors.Is(err, ErrNoSuchTable) {
		dirs, ok, serr := c.staged.lookup(ctx, wh, id, time.Now())
		if serr != nil {
			return nil, serr
		}
		if ok {
			_, taken, ferr := c.findPointer(ctx, Ident{}, func(p Pointer) bool { return LocationsOverlap(dirs, PointerLocations(p)) })
			if ferr != nil {
				return nil, ferr
			}
			if !taken {
				return dirs, nil
			}
			if err := c.staged.forget(ctx, wh, id); err != nil {
				return nil, err
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return lt.Directories()
}

// forgetStaged drops id's staged entry after its create committed. A
// failure only logs: the commit stands, and the entry stops working by
// itself (TableDirectories finds the table) and expires.
func (c *Catalog) forgetStaged(ctx context.Context, wh *Warehouse, id Ident) {
	if err := c.staged.forget(ctx, wh, id); err != nil {
		c.log.Warn("forget staged table", "table", id.String(), "err", err)
	}
}
