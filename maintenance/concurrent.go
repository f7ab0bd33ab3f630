package maintenance

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// A rewrite planned on one snapshot and committed on a later head must
// not undo what the snapshots in between did to the rows it rewrote. What
// they did is read from their manifests, never from their summaries: the
// spec makes the summary totals optional (DuckDB 1.4 writes only
// "operation"), and a delete committed without total-delete-files used to
// pass unnoticed, so the rewrite's new files brought the deleted row back.
//
// iceberg-go v0.7.0 has this check (validateNoNewDeletesForRewrittenFiles
// and validateDataFilesExist, registered by Transaction.NewRewrite), but
// runs it only from Transaction.Commit's refresh-and-replay, against the
// transaction's own base: a transaction staged on the new head finds no
// concurrent snapshot, and replaying one staged on the planned head would
// land that head's (older) ingest offsets on top of newer rows (see
// ingest/sink's doc), and is refused anyway for a rewrite that removes
// position deletes. Proposed upstream: an exported "validate from
// snapshot" on RewriteFiles (Java's RewriteFiles.validateFromSnapshot),
// so a caller that stages on the new head validates from the planned one.

// conflict says why a rewrite must yield to the snapshots committed after
// the one it was planned on; empty when it may be staged on the new head.
type conflict string

const (
	conflictNone    conflict = ""
	conflictDeletes conflict = "delete files added during compaction"
	conflictFiles   conflict = "files changed during compaction"
	conflictLineage conflict = "main no longer descends from the snapshot compaction planned on"
)

// changesSince reports whether a rewrite of the data files rewritten,
// planned on snapshot planned, may be staged on head (the current main
// of base): it walks every snapshot main gained since planned and reads
// the entries each one added to its own manifests. It is a conflict when
// one of them
//   - added an equality delete (it may match any rewritten row),
//   - added a position delete or deletion vector that names a rewritten
//     file, or whose file cannot be told (no referenced_data_file and
//     different file_path bounds, as iceberg-go and DuckDB write them)
//     in the partition of a rewritten file (a position delete applies
//     only to files of its own partition, spec "Scan Planning"), or
//   - removed a rewritten data file;
//
// and conflictLineage when planned is not an ancestor of head (main was
// rolled back or replaced). When in doubt, yield: the next pass plans on
// the new head.
//
// Errors: those of reading the manifests (nothing is committed then).
func changesSince(ctx context.Context, base *table.Table, planned int64, rewritten []iceberg.DataFile) (conflict, error) {
	paths, partitions := map[string]bool{}, map[string]bool{}
	for _, df := range rewritten {
		paths[df.FilePath()] = true
		partitions[partitionKey(df)] = true
	}
	head := base.CurrentSnapshot()
	if head == nil {
		return conflictLineage, nil
	}
	between, found := table.AncestorsBetween(head.SnapshotID, planned, base.Metadata().SnapshotByID)
	if !found {
		return conflictLineage, nil
	}
	fs, err := base.FS(ctx)
	if err != nil {
		return conflictNone, err
	}
	for _, snap := range between {
		ms, err := snap.Manifests(fs)
		if err != nil {
			return conflictNone, fmt.Errorf("manifests of snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, m := range ms {
			// A snapshot writes what it adds and removes into manifests
			// of its own.
			if m.SnapshotID() != snap.SnapshotID {
				continue
			}
			for e, err := range m.Entries(fs, false) {
				if err != nil {
					return conflictNone, fmt.Errorf("manifest %s of snapshot %d: %w", m.FilePath(), snap.SnapshotID, err)
				}
				if e.SnapshotID() != snap.SnapshotID {
					continue // carried over from an earlier snapshot
				}
				df := e.DataFile()
				switch {
				case e.Status() == iceberg.EntryStatusDELETED && df.ContentType() == iceberg.EntryContentData:
					if paths[df.FilePath()] {
						return conflictFiles, nil
					}
				case e.Status() != iceberg.EntryStatusADDED:
				case df.ContentType() == iceberg.EntryContentEqDeletes:
					return conflictDeletes, nil
				case df.ContentType() == iceberg.EntryContentPosDeletes:
					if target, ok := deleteTarget(df); ok && paths[target] || !ok && partitions[partitionKey(df)] {
						return conflictDeletes, nil
					}
				}
			}
		}
	}
	return conflictNone, nil
}

// filePathFieldID is the reserved field id of a position delete file's
// file_path column (https://iceberg.apache.org/spec/#position-delete-files).
const filePathFieldID = 2147483546

// deleteTarget is the one data file a position delete file (or deletion
// vector) applies to: its referenced_data_file, or its file_path column
// when the lower and upper bounds are equal; ok is false when the file
// may apply to several.
func deleteTarget(df iceberg.DataFile) (string, bool) {
	if ref := df.ReferencedDataFile(); ref != nil && *ref != "" {
		return *ref, true
	}
	lo, hi := df.LowerBoundValues()[filePathFieldID], df.UpperBoundValues()[filePathFieldID]
	if len(lo) == 0 || !bytes.Equal(lo, hi) {
		return "", false
	}
	return string(lo), true
}

// partitionKey names df's partition: its spec id and partition values.
// Both sides of a comparison come from the same table's manifests, decoded
// alike, so a value's Go type and printed form agree.
func partitionKey(df iceberg.DataFile) string {
	p := df.Partition()
	ids := make([]int, 0, len(p))
	for id := range p {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "%d", df.SpecID())
	for _, id := range ids {
		fmt.Fprintf(&b, "/%d=%T:%v", id, p[id], p[id])
	}
	return b.String()
}
