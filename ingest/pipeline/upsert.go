package pipeline

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/ingest/upsert"
)

// ensureIndex makes p.index the key index of the sink's base snapshot,
// rebuilding it from the table's files when it describes another one (or
// none): on start, after a dropped or failed commit, after another
// writer's commit. A mismatch is detected by the snapshot id, never
// trusted.
func (p *Pipeline) ensureIndex(ctx context.Context) error {
	tbl := p.sink.Table()
	want := int64(-1)
	if snap := tbl.CurrentSnapshot(); snap != nil {
		want = snap.SnapshotID
	}
	if p.index != nil && p.index.SnapshotID() == want {
		return nil
	}
	var ix *upsert.Index
	var err error
	if kf := p.keyFields; kf != nil {
		ix, err = upsert.RebuildFrom(ctx, tbl, kf.names, func(_ context.Context, rec arrow.RecordBatch, i int) (string, error) {
			return kf.fromArrow(rec, i)
		})
	} else {
		ix, err = upsert.Rebuild(ctx, tbl, p.indexKey)
	}
	if err != nil {
		return fmt.Errorf("table %s: rebuild the key index: %w", p.cfg.Table, err)
	}
	p.index = ix
	p.log.Info("key index rebuilt", "snapshot", want, "keys", ix.Len())
	p.update(func(st *Status) { st.IndexKeys, st.IndexKeyBytes = int64(ix.Len()), ix.KeyBytes() })
	return nil
}

// indexKey is the upsert.KeyFunc of a row read back from the table: the
// key as decoded when the record was taken.
func (p *Pipeline) indexKey(ctx context.Context, raw []byte) (string, error) {
	k, _, bad, err := p.keys.key(ctx, raw)
	if bad != nil {
		return "", bad
	}
	return k, err
}

// retire prepares, on the index of the sink's base snapshot, the position
// deletes of the rows plan's batch replaces or deletes, writes them and
// adds them to w. On error w's files are removed.
func (p *Pipeline) retire(ctx context.Context, plan upsert.Plan, w *sink.Written) (*upsert.Delta, error) {
	delta, err := p.prepare(ctx, plan, w)
	if err != nil {
		p.sink.Remove(ctx, w)
		return nil, err
	}
	return delta, nil
}

func (p *Pipeline) prepare(ctx context.Context, plan upsert.Plan, w *sink.Written) (*upsert.Delta, error) {
	if err := p.ensureIndex(ctx); err != nil {
		return nil, err
	}
	delta, err := p.index.Prepare(plan, w.Files)
	if err != nil {
		return nil, err
	}
	files, err := upsert.WritePositionDeletes(ctx, p.sink.Table(), delta.Deletes)
	p.sink.AddDeletes(w, files)
	return delta, err
}

// indexCommitted moves the index to the snapshot that committed delta.
func (p *Pipeline) indexCommitted(delta *upsert.Delta) error {
	snap := p.sink.Table().CurrentSnapshot()
	if err := p.index.Apply(delta, snap.SnapshotID); err != nil {
		p.index = nil
		return err
	}
	var deletes int64
	for _, pos := range delta.Deletes {
		deletes += int64(len(pos))
	}
	keys, keyBytes := int64(p.index.Len()), p.index.KeyBytes()
	p.update(func(st *Status) {
		st.Upserts += delta.Upserts
		st.Deletes += delta.DeleteChanges
		st.NoopDeletes += delta.NoopDeletes
		st.Truncates += delta.Truncates
		st.RowsDeleted += deletes
		st.IndexKeys, st.IndexKeyBytes = keys, keyBytes
	})
	return nil
}

// keepRows returns the rows of recs (concatenated) at the ascending
// indexes keep, as new records of the same schema. recs are not released.
func keepRows(recs []arrow.RecordBatch, keep []int) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	ctx := compute.WithAllocator(context.Background(), memory.DefaultAllocator)
	base, k := 0, 0
	for _, rec := range recs {
		n := int(rec.NumRows())
		mb := array.NewBooleanBuilder(memory.DefaultAllocator)
		kept := 0
		for i := range n {
			on := k < len(keep) && keep[k] == base+i
			if on {
				k++
				kept++
			}
			mb.Append(on)
		}
		mask := mb.NewBooleanArray()
		mb.Release()
		base += n
		if kept == 0 {
			mask.Release()
			continue
		}
		filtered, err := compute.FilterRecordBatch(ctx, rec, mask, compute.DefaultFilterOptions())
		mask.Release()
		if err != nil {
			release(out)
			return nil, fmt.Errorf("keep the batch's last change per key: %w", err)
		}
		out = append(out, filtered)
	}
	if k != len(keep) {
		release(out)
		return nil, fmt.Errorf("keep the batch's last change per key: %d of %d rows found", k, len(keep))
	}
	return out, nil
}
