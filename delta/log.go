package delta

import (
	"context"
	"fmt"
	"github.com/tarnhq/tarn/internal/errclass"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// state is a Delta table's state at one version, the result of replaying
// its log (PROTOCOL.md "Action Reconciliation"): one protocol, one
// metaData, the latest txn per appId, the live logical files and the
// tombstones of removed ones.
type state struct {
	// version is the last version applied; -1 before version 0.
	version  int64
	protocol *Protocol
	metadata *Metadata
	txns     map[string]Txn
	files    map[fileKey]*Add
	// tombstones are removed files, for the file-safety check (files a
	// retained version still names) and the checkpoints.
	tombstones map[fileKey]*Remove
	// timestampMs is the commit timestamp (commitInfo.timestamp) of
	// version, 0 when unknown.
	timestampMs int64
}

func newState() *state {
	return &state{version: -1, txns: map[string]Txn{}, files: map[fileKey]*Add{}, tombstones: map[fileKey]*Remove{}}
}

// clone copies st so that a commit can be staged on it.
func (st *state) clone() *state {
	c := *st
	c.txns = maps.Clone(st.txns)
	c.files = maps.Clone(st.files)
	c.tombstones = maps.Clone(st.tombstones)
	return &c
}

// apply reconciles one commit's (or checkpoint's) actions into st.
func (st *state) apply(actions []Action) {
	for _, a := range actions {
		switch {
		case a.Protocol != nil:
			st.protocol = a.Protocol
		case a.MetaData != nil:
			st.metadata = a.MetaData
		case a.Txn != nil:
			st.txns[a.Txn.AppID] = *a.Txn
		case a.Add != nil:
			k := fileKey{a.Add.Path, a.Add.DeletionVector.UniqueID()}
			st.files[k] = a.Add
			delete(st.tombstones, k)
		case a.Remove != nil:
			k := fileKey{a.Remove.Path, a.Remove.DeletionVector.UniqueID()}
			delete(st.files, k)
			st.tombstones[k] = a.Remove
		case a.CommitInfo != nil:
			st.timestampMs = a.CommitInfo.Timestamp
		}
	}
}

// Log file names (PROTOCOL.md "Delta Log Entries", "Classic checkpoint").
const (
	logDir             = "_delta_log"
	lastCheckpointName = "_last_checkpoint"
)

func commitName(v int64) string     { return fmt.Sprintf("%020d.json", v) }
func checkpointName(v int64) string { return fmt.Sprintf("%020d.checkpoint.parquet", v) }

// parseLogName returns the version of a commit or classic checkpoint
// file name; ok is false for any other name (multi-part and UUID-named
// checkpoints, CRC files, temporary files, _last_checkpoint).
func parseLogName(name string) (v int64, checkpoint, ok bool) {
	num, rest, found := strings.Cut(name, ".")
	if !found || len(num) != 20 {
		return 0, false, false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, false, false
	}
	switch rest {
	case "json":
		return n, false, true
	case "checkpoint.parquet":
		return n, true, true
	}
	return 0, false, false
}

// logListing is what a listing of _delta_log holds.
type logListing struct {
	commits     []int64 // sorted
	checkpoints []int64 // sorted
	temps       []string
}

func listLog(ctx context.Context, s logStore) (logListing, error) {
	names, err := s.list(ctx)
	if err != nil {
		return logListing{}, err
	}
	var l logListing
	for _, n := range names {
		if v, cp, ok := parseLogName(n); ok {
			if cp {
				l.checkpoints = append(l.checkpoints, v)
			} else {
				l.commits = append(l.commits, v)
			}
		} else if strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".tmp") {
			l.temps = append(l.temps, n)
		}
	}
	return l, nil
}

// ErrLogCorrupt: the log cannot be replayed (a gap in the versions, no
// checkpoint below the oldest commit, an unreadable file).
var ErrLogCorrupt = errclass.New(errclass.Internal, "delta log cannot be replayed")

// replay reads the log from its newest classic checkpoint (or version 0)
// to its newest commit. A log without files is a fresh state (version
// -1). Errors wrap ErrLogCorrupt, or the store's.
func replay(ctx context.Context, s logStore) (*state, logListing, error) {
	l, err := listLog(ctx, s)
	if err != nil {
		return nil, l, err
	}
	st := newState()
	if len(l.commits) == 0 && len(l.checkpoints) == 0 {
		return st, l, nil
	}
	latest := int64(-1)
	if len(l.commits) > 0 {
		latest = l.commits[len(l.commits)-1]
	}
	// The newest checkpoint not beyond the newest commit that reads.
	from := int64(0)
	for i := len(l.checkpoints) - 1; i >= 0; i-- {
		cp := l.checkpoints[i]
		if cp > latest && latest >= 0 {
			continue
		}
		b, err := s.read(ctx, checkpointName(cp))
		if err != nil {
			continue
		}
		acts, err := decodeCheckpoint(ctx, b)
		if err != nil {
			continue
		}
		st.apply(acts)
		st.version = cp
		from = cp + 1
		if b, err := s.read(ctx, commitName(cp)); err == nil {
			if acts, err := decodeCommit(b); err == nil {
				for _, a := range acts {
					if a.CommitInfo != nil {
						st.timestampMs = a.CommitInfo.Timestamp
					}
				}
			}
		}
		break
	}
	if st.version < 0 && (len(l.commits) == 0 || l.commits[0] != 0) {
		return nil, l, fmt.Errorf("%w: %s has no readable checkpoint and no version 0", ErrLogCorrupt, s.uri())
	}
	next := from
	for _, v := range l.commits {
		if v < from {
			continue
		}
		if v != next {
			return nil, l, fmt.Errorf("%w: %s has version %d after %d", ErrLogCorrupt, s.uri(), v, next-1)
		}
		b, err := s.read(ctx, commitName(v))
		if err != nil {
			return nil, l, fmt.Errorf("%w: read version %d: %w", ErrLogCorrupt, v, err)
		}
		acts, err := decodeCommit(b)
		if err != nil {
			return nil, l, fmt.Errorf("%w: version %d: %w", ErrLogCorrupt, v, err)
		}
		st.apply(acts)
		st.version = v
		next++
	}
	if st.protocol == nil || st.metadata == nil {
		return nil, l, fmt.Errorf("%w: %s has no protocol or metaData", ErrLogCorrupt, s.uri())
	}
	return st, l, nil
}

// removeStaleTemps deletes temporary files a crashed writer left (older
// than a minute, so another writer's file being linked is left alone).
func removeStaleTemps(ctx context.Context, s logStore, temps []string) {
	ll, ok := s.(*localLog)
	if !ok {
		return
	}
	for _, t := range temps {
		if fi, err := os.Stat(filepath.Join(ll.dir, t)); err == nil && time.Since(fi.ModTime()) > time.Minute {
			_ = s.remove(ctx, t)
		}
	}
}
