package delta

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/errclass"
)

// ErrDeleteFiles: the Iceberg snapshot has row-level delete files, which
// this version of the Delta output cannot express yet (deletion
// vectors); the Delta log stays at the last snapshot without them.
var ErrDeleteFiles = errclass.New(errclass.Internal, "the Iceberg snapshot has delete files, which the Delta log cannot express yet")

// footerConcurrency bounds the Parquet footer reads of one table.
const footerConcurrency = 8

// tableLog is one table's Delta log and what Tarn knows of it. mu
// serializes the publisher's commits with the reads of KeepFiles and
// Formats; smu guards the status fields, so that a status read never
// waits for a commit. Lock order: mu, then smu.
type tableLog struct {
	id catalog.Ident

	mu        sync.Mutex
	location  string // the Iceberg table location the log was opened for
	root      string
	store     logStore
	st        *state // nil until replayed
	manifests manifestCache
	footers   map[string]*fileColumns // by Iceberg file path
	// cpSeq caches, per checkpoint version, the Iceberg sequence number
	// and commit timestamp its version reflects (for the log cleanup).
	cpSeq map[int64][2]int64
	// lastCP is the newest checkpoint's version (-1: none), from the
	// listing at replay and then from the checkpoints written.
	lastCP int64

	smu    sync.Mutex
	status TableStatus
	// behindSince is the time of the first commit notice the log does not
	// reflect yet (zero when caught up); nextSince that of the first
	// notice while a publish runs (publishing).
	behindSince time.Time
	nextSince   time.Time
	publishing  bool
}

func newTableLog(id catalog.Ident) *tableLog {
	return &tableLog{id: id, footers: map[string]*fileColumns{}, cpSeq: map[int64][2]int64{},
		status: TableStatus{Table: id.String()}}
}

// open (re)opens the log for tbl's location and replays it when not
// loaded; mu held.
func (t *tableLog) open(ctx context.Context, tbl *table.Table, fsys icebergio.IO) error {
	loc, root := tbl.Location(), deltaRoot(tbl)
	if t.store == nil || t.location != loc || t.root != root {
		s, err := openLogStore(fsys, root+"/"+logDir)
		if err != nil {
			return err
		}
		t.location, t.root, t.store, t.st = loc, root, s, nil
		t.manifests, t.footers = nil, map[string]*fileColumns{}
	}
	if t.st != nil {
		return nil
	}
	st, l, err := replay(ctx, t.store)
	if err != nil {
		return err
	}
	removeStaleTemps(ctx, t.store, l.temps)
	t.st = st
	t.lastCP = -1
	if n := len(l.checkpoints); n > 0 {
		t.lastCP = l.checkpoints[n-1]
	}
	return nil
}

// commitResult is what one publish did.
type commitResult struct {
	version    int64
	checkpoint bool
	upToDate   bool
}

// publish makes the Delta log reflect main's head of tbl: one commit
// (version = the last + 1, written put-if-absent) whose actions turn the
// last version's state into the head snapshot's files, schema and
// protocol, with txn {appId: table uuid, version: head's sequence
// number}. A log that already reflects the head gets nothing. A version
// written by someone else meanwhile (ErrVersionExists) makes it replay
// the log and build the commit again, at most 3 times. Then, every
// checkpoint interval, a checkpoint, and the log cleanup. mu held.
func (t *tableLog) publish(ctx context.Context, tbl *table.Table, cfg Config, now func() time.Time) (commitResult, error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return commitResult{}, err
	}
	for attempt := 1; ; attempt++ {
		if err := t.open(ctx, tbl, fsys); err != nil {
			return commitResult{}, err
		}
		res, err := t.commitHead(ctx, tbl, fsys, cfg, now)
		if errors.Is(err, ErrVersionExists) && attempt < 3 {
			t.st = nil // replay what the other writer wrote
			continue
		}
		if err != nil {
			return res, err
		}
		// A checkpoint is due when a multiple of the interval was reached
		// since the newest checkpoint: normally at that multiple, or, after
		// a crash between a commit and its checkpoint, at the next publish
		// (even one with nothing new to commit).
		if iv := checkpointInterval(tbl, cfg); t.st.version >= iv && t.st.version/iv*iv > t.lastCP {
			if err := t.checkpoint(ctx); err != nil {
				return res, fmt.Errorf("checkpoint version %d: %w", t.st.version, err)
			}
			res.checkpoint = true
			if err := t.cleanup(ctx, tbl.Metadata()); err != nil {
				return res, fmt.Errorf("clean the log up: %w", err)
			}
		}
		return res, nil
	}
}

func checkpointInterval(tbl *table.Table, cfg Config) int64 {
	if v, err := strconv.ParseInt(tbl.Properties()[PropCheckpointInterval], 10, 64); err == nil && v > 0 {
		return v
	}
	return int64(cfg.CheckpointInterval)
}

// commitHead writes the one commit publish describes. mu held, log open.
func (t *tableLog) commitHead(ctx context.Context, tbl *table.Table, fsys icebergio.IO, cfg Config, now func() time.Time) (commitResult, error) {
	md := tbl.Metadata()
	st := t.st
	appID := md.TableUUID().String()
	head := md.CurrentSnapshot()
	var seq int64
	if head != nil {
		seq = head.SequenceNumber
	}
	files, deletes, cache, err := snapshotFiles(fsys, head, t.manifests)
	if err != nil {
		return commitResult{}, err
	}
	if deletes > 0 {
		return commitResult{}, fmt.Errorf("%w (snapshot %d has %d)", ErrDeleteFiles, head.SnapshotID, deletes)
	}
	t.manifests = cache

	var prevPhys map[int]string
	if st.metadata != nil {
		prevPhys = physicalNames(st.metadata.SchemaString)
	}
	sc := md.CurrentSchema()
	namer, err := schemaNamer(sc, namesStable(md, prevPhys), func() ([]*fileColumns, error) { return t.fileColumns(ctx, fsys, files) })
	if err != nil {
		return commitResult{}, err
	}
	ms := mapSchema(sc, namer)
	schemaString, err := ms.schemaString()
	if err != nil {
		return commitResult{}, err
	}
	proto := protocolFor(ms.ntz, st.protocol)
	created := now().UnixMilli()
	if st.metadata != nil && st.metadata.CreatedTime != nil {
		created = *st.metadata.CreatedTime
	}
	meta := Metadata{ID: appID, Name: t.id.Name, Format: Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: schemaString, PartitionColumns: []string{}, CreatedTime: &created,
		Configuration: map[string]string{
			confColumnMappingMode:  "id",
			confColumnMappingMaxID: strconv.Itoa(md.LastColumnID()),
		}}
	t.setOmitted(ms.omitted)

	txn, hasTxn := st.txns[appID]
	protoSame := st.protocol != nil && protocolEqual(*st.protocol, proto)
	metaSame := st.metadata != nil && metadataEqual(*st.metadata, meta)
	if st.version >= 0 && hasTxn && txn.Version == seq && protoSame && metaSame {
		return commitResult{version: st.version, upToDate: true}, nil
	}

	ts := max(now().UnixMilli(), st.timestampMs+1)
	// Files are matched by the data file they name, not by the spelling
	// of their path: a log rooted elsewhere before (deltaRoot) names
	// them differently.
	want := map[fileKey]liveFile{}
	for p, f := range files {
		want[fileKey{deltaPath(t.root, p), ""}] = f
	}
	have := map[string]bool{}
	for k := range st.files {
		have[icebergPath(t.root, k.path)] = true
	}
	// A version changes no data (dataChange false, PROTOCOL.md "Add
	// File and Remove File") only when every snapshot it coalesces is a
	// rewrite: a compaction of files no version named yet carries rows
	// new to the Delta table, which a streaming reader must see.
	onlyReplace := true
	for _, s := range ancestorsSince(md, head, txn.Version) {
		if s.Summary == nil || s.Summary.Operation != table.OpReplace {
			onlyReplace = false
		}
	}
	var adds, removes []Action
	dataAdds, rewrite := 0, false
	for _, k := range sortedFileKeys(want) {
		f := want[k]
		if have[f.df.FilePath()] {
			continue
		}
		stats, err := statsJSON(f.df, ms.leaves)
		if err != nil {
			return commitResult{}, err
		}
		change := true
		if s := md.SnapshotByID(f.addedBy); onlyReplace && s != nil && s.Summary != nil && s.Summary.Operation == table.OpReplace {
			change = false
		}
		if change {
			dataAdds++
		} else {
			rewrite = true
		}
		addTime := ts
		if s := md.SnapshotByID(f.addedBy); s != nil {
			addTime = s.TimestampMs
		}
		adds = append(adds, Action{Add: &Add{Path: k.path, PartitionValues: map[string]string{}, Size: f.df.FileSizeBytes(),
			ModificationTime: addTime, DataChange: change, Stats: stats}})
	}
	for _, k := range sortedFileKeys(st.files) {
		if _, ok := files[icebergPath(t.root, k.path)]; ok {
			continue
		}
		a := st.files[k]
		removes = append(removes, Action{Remove: &Remove{Path: a.Path, DeletionTimestamp: ts, DataChange: !onlyReplace,
			ExtendedFileMetadata: true, PartitionValues: a.PartitionValues, Size: a.Size, DeletionVector: a.DeletionVector}})
	}

	info := &CommitInfo{Timestamp: ts, Operation: operation(st, dataAdds, rewrite, len(removes), protoSame && metaSame),
		OperationParameters: map[string]string{}, EngineInfo: "Tarn", IsBlindAppend: len(removes) == 0 && !rewrite,
		IcebergSequenceNumber: seq}
	if head != nil {
		id := head.SnapshotID
		info.IcebergSnapshotID = &id
		info.OperationParameters["icebergSnapshotId"] = strconv.FormatInt(id, 10)
	}
	actions := []Action{{CommitInfo: info}}
	if !protoSame {
		actions = append(actions, Action{Protocol: &proto})
	}
	if !metaSame {
		actions = append(actions, Action{MetaData: &meta})
	}
	actions = append(actions, Action{Txn: &Txn{AppID: appID, Version: seq, LastUpdated: ts}})
	actions = append(actions, removes...)
	actions = append(actions, adds...)

	data, err := encodeCommit(actions)
	if err != nil {
		return commitResult{}, err
	}
	v := st.version + 1
	if err := t.store.putIfAbsent(ctx, commitName(v), data); err != nil {
		return commitResult{}, err
	}
	next := st.clone()
	next.apply(actions)
	next.version, next.timestampMs = v, ts
	t.st = next
	for _, r := range removes {
		delete(t.footers, icebergPath(t.root, r.Remove.Path))
	}
	return commitResult{version: v}, nil
}

// operation is the commitInfo operation DESCRIBE HISTORY shows.
func operation(st *state, dataAdds int, rewrite bool, removes int, sameMeta bool) string {
	switch {
	case st.version < 0:
		return "CREATE TABLE"
	case dataAdds > 0:
		return "WRITE"
	case rewrite:
		return "OPTIMIZE"
	case removes > 0:
		return "DELETE"
	case !sameMeta:
		return "CHANGE COLUMN"
	}
	return "WRITE"
}

func metadataEqual(a, b Metadata) bool {
	return a.ID == b.ID && a.Name == b.Name && a.SchemaString == b.SchemaString &&
		slices.Equal(a.PartitionColumns, b.PartitionColumns) && maps.Equal(a.Configuration, b.Configuration) &&
		a.Format.Provider == b.Format.Provider
}

// fileColumns returns the Parquet columns of every file (footers read
// once per file, at most footerConcurrency at a time). mu held.
func (t *tableLog) fileColumns(ctx context.Context, fsys icebergio.IO, files map[string]liveFile) ([]*fileColumns, error) {
	var missing []string
	for p := range files {
		if _, ok := t.footers[p]; !ok {
			missing = append(missing, p)
		}
	}
	got := make([]*fileColumns, len(missing))
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(footerConcurrency)
	for i, p := range missing {
		g.Go(func() error {
			fc, err := readFileColumns(fsys, p)
			got[i] = fc
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, p := range missing {
		t.footers[p] = got[i]
	}
	out := make([]*fileColumns, 0, len(files))
	for p := range files {
		out = append(out, t.footers[p])
	}
	return out, nil
}

// checkpoint writes a checkpoint of the current version and then
// _last_checkpoint. A checkpoint that exists already (an earlier run
// wrote it before a crash) is complete — it appears whole or not at all
// — and is kept. mu held.
func (t *tableLog) checkpoint(ctx context.Context) error {
	st := t.st
	data, actions, adds, err := encodeCheckpoint(st)
	if err != nil {
		return err
	}
	if err := t.store.putIfAbsent(ctx, checkpointName(st.version), data); err != nil && !errors.Is(err, ErrVersionExists) {
		return err
	}
	lc, err := encodeLastCheckpoint(lastCheckpoint{Version: st.version, Size: actions, SizeInBytes: int64(len(data)), NumOfAddFiles: adds})
	if err != nil {
		return err
	}
	if tx, ok := st.txns[st.metadata.ID]; ok {
		t.cpSeq[st.version] = [2]int64{tx.Version, st.timestampMs}
	}
	if err := t.store.replace(ctx, lastCheckpointName, lc); err != nil {
		return err
	}
	t.lastCP = st.version
	return nil
}

func (t *tableLog) setOmitted(o []Omitted) {
	t.smu.Lock()
	t.status.Omitted = o
	t.smu.Unlock()
}
