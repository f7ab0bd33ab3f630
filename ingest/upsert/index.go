package upsert

import (
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
)

// loc is a committed row: a data file (an index into Index.files) and the
// row's 0-based position in it.
type loc struct {
	file int32
	pos  int64
}

// Index maps each key of one snapshot's live rows to the row's data file
// and position. Keys are stored whole (a Go string each): collisions are
// impossible, at the cost of the key's length per entry; spilling to disk
// and hashing long keys are on the roadmap (docs/upsert.md). An Index is
// used by one goroutine.
type Index struct {
	// snapshotID is the snapshot the index describes; -1 for a table
	// without a snapshot.
	snapshotID int64
	files      []string
	fileIDs    map[string]int32
	keys       map[string]loc
	// keyBytes is the sum of the keys' lengths.
	keyBytes int64
}

// NewIndex returns the empty index of a table whose main branch is
// snapshotID (-1 for none) and holds no rows.
func NewIndex(snapshotID int64) *Index {
	return &Index{snapshotID: snapshotID, fileIDs: map[string]int32{}, keys: map[string]loc{}}
}

// SnapshotID is the snapshot the index describes (-1: no snapshot).
func (ix *Index) SnapshotID() int64 { return ix.snapshotID }

// Len is the number of keys: the table's live rows.
func (ix *Index) Len() int { return len(ix.keys) }

// KeyBytes is the sum of the stored keys' lengths in bytes (the rest of
// an entry is a fixed overhead, see docs/upsert.md).
func (ix *Index) KeyBytes() int64 { return ix.keyBytes }

// Lookup returns the data file and position of key's live row.
func (ix *Index) Lookup(key string) (file string, pos int64, ok bool) {
	l, ok := ix.keys[key]
	if !ok {
		return "", 0, false
	}
	return ix.files[l.file], l.pos, true
}

func (ix *Index) fileID(path string) int32 {
	id, ok := ix.fileIDs[path]
	if !ok {
		id = int32(len(ix.files))
		ix.files = append(ix.files, path)
		ix.fileIDs[path] = id
	}
	return id
}

func (ix *Index) put(key, file string, pos int64) {
	if _, ok := ix.keys[key]; !ok {
		ix.keyBytes += int64(len(key))
	}
	ix.keys[key] = loc{file: ix.fileID(file), pos: pos}
}

func (ix *Index) remove(key string) {
	if _, ok := ix.keys[key]; ok {
		ix.keyBytes -= int64(len(key))
		delete(ix.keys, key)
	}
}

// Delta is one batch's effect on the table and the index: the positions
// to delete, and the keys' new rows. Nothing changes until Apply.
type Delta struct {
	// Deletes holds, per data file path, the positions to delete,
	// ascending: the committed rows of every key the batch upserts or
	// deletes.
	Deletes map[string][]int64
	// Upserts and DeleteChanges count the batch's changes of each kind
	// (Plan.Upserts, Plan.Deletes); NoopDeletes are the keys whose last
	// change is a delete but that had no committed row.
	Upserts, DeleteChanges, NoopDeletes int64
	// Truncates counts the batch's truncates (Plan.Truncates).
	Truncates int64

	base int64
	// clear: the batch truncates, the index starts over empty.
	clear bool
	set   []placed
	unset []string
}

type placed struct {
	key  string
	file string
	pos  int64
}

// Prepare computes the effect of plan's batch once its kept rows were
// written as files, in the order the sink wrote them into an
// unpartitioned table: file i holds rows [n, n+Count_i) of the kept
// rows, n the counts before it (sink package doc, "Row positions").
//
// Errors: the files hold another number of rows than plan keeps.
func (ix *Index) Prepare(plan Plan, files []iceberg.DataFile) (*Delta, error) {
	var rows int64
	for _, f := range files {
		rows += f.Count()
	}
	if rows != int64(len(plan.Keep)) {
		return nil, fmt.Errorf("upsert: %d rows written for %d kept rows", rows, len(plan.Keep))
	}
	d := &Delta{Deletes: map[string][]int64{}, Upserts: plan.Upserts, DeleteChanges: plan.Deletes, Truncates: plan.Truncates,
		base: ix.snapshotID, clear: plan.Truncate}
	if plan.Truncate {
		// Every committed row goes; the changes after the truncate
		// then find no committed row.
		for _, l := range ix.keys {
			f := ix.files[l.file]
			d.Deletes[f] = append(d.Deletes[f], l.pos)
		}
	}
	retire := func(key string) bool {
		if plan.Truncate {
			return false
		}
		l, ok := ix.keys[key]
		if ok {
			f := ix.files[l.file]
			d.Deletes[f] = append(d.Deletes[f], l.pos)
		}
		return ok
	}
	i := 0
	for _, f := range files {
		for pos := int64(0); pos < f.Count(); pos++ {
			key := plan.KeepKeys[i]
			retire(key)
			d.set = append(d.set, placed{key: key, file: f.FilePath(), pos: pos})
			i++
		}
	}
	for _, key := range plan.Deleted {
		if retire(key) {
			d.unset = append(d.unset, key)
		} else {
			d.NoopDeletes++
		}
	}
	for f := range d.Deletes {
		slices.Sort(d.Deletes[f])
	}
	return d, nil
}

// Apply moves the index to snapshotID, the snapshot that committed d.
//
// Errors: d was prepared on another snapshot than the index's.
func (ix *Index) Apply(d *Delta, snapshotID int64) error {
	if d.base != ix.snapshotID {
		return fmt.Errorf("upsert: delta prepared on snapshot %d applied to the index of snapshot %d", d.base, ix.snapshotID)
	}
	if d.clear {
		clear(ix.keys)
		ix.keyBytes = 0
	}
	for _, key := range d.unset {
		ix.remove(key)
	}
	for _, p := range d.set {
		ix.put(p.key, p.file, p.pos)
	}
	ix.snapshotID = snapshotID
	return nil
}
