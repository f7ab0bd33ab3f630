package delta

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/table"
)

// cleanup removes the log's history that Iceberg's snapshot expiry made
// unreadable, following PROTOCOL.md "Metadata Cleanup": the versions to
// keep are those reflecting a snapshot still in the Iceberg metadata;
// the newest checkpoint not after the oldest of them (the cutoff) is
// kept with its commit file and everything after it, and the commit and
// checkpoint files before it are deleted. Tombstones of files removed at
// or before the cutoff name no retained version any more and are
// dropped (they leave the next checkpoint, and KeepFiles lets
// maintenance delete those files once Iceberg no longer needs them).
//
// A version's snapshot is known by its txn version (the sequence
// number); a checkpoint's comes from its commit file and is cached.
// mu held.
func (t *tableLog) cleanup(ctx context.Context, md table.Metadata) error {
	minSeq := int64(-1)
	for _, s := range md.Snapshots() {
		if minSeq < 0 || s.SequenceNumber < minSeq {
			minSeq = s.SequenceNumber
		}
	}
	if minSeq < 0 {
		return nil
	}
	l, err := listLog(ctx, t.store)
	if err != nil {
		return err
	}
	cutoff, cutoffTs := int64(-1), int64(0)
	for _, cp := range l.checkpoints {
		seq, ts, err := t.checkpointSeq(ctx, cp)
		if err != nil {
			return err
		}
		if seq > minSeq {
			break
		}
		cutoff, cutoffTs = cp, ts
	}
	if cutoff <= 0 {
		return nil
	}
	var errs []error
	for _, v := range l.commits {
		if v < cutoff {
			errs = append(errs, t.store.remove(ctx, commitName(v)))
		}
	}
	for _, v := range l.checkpoints {
		if v < cutoff {
			errs = append(errs, t.store.remove(ctx, checkpointName(v)))
			delete(t.cpSeq, v)
		}
	}
	for k, r := range t.st.tombstones {
		if r.DeletionTimestamp <= cutoffTs {
			delete(t.st.tombstones, k)
		}
	}
	t.smu.Lock()
	t.status.OldestVersion = &cutoff
	t.smu.Unlock()
	return errors.Join(errs...)
}

// checkpointSeq returns the Iceberg sequence number and the commit
// timestamp of checkpoint version v, from its commit file.
func (t *tableLog) checkpointSeq(ctx context.Context, v int64) (seq, ts int64, err error) {
	if c, ok := t.cpSeq[v]; ok {
		return c[0], c[1], nil
	}
	b, err := t.store.read(ctx, commitName(v))
	if err != nil {
		return 0, 0, fmt.Errorf("read version %d: %w", v, err)
	}
	acts, err := decodeCommit(b)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: version %d: %w", ErrLogCorrupt, v, err)
	}
	seq = -1
	for _, a := range acts {
		switch {
		case a.Txn != nil && a.Txn.AppID == t.st.metadata.ID:
			seq = a.Txn.Version
		case a.CommitInfo != nil:
			ts = a.CommitInfo.Timestamp
		}
	}
	if seq < 0 {
		// A version without Tarn's txn (another writer's): keep it.
		seq = 1<<63 - 1
	}
	t.cpSeq[v] = [2]int64{seq, ts}
	return seq, ts, nil
}
