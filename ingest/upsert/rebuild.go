package upsert

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/tarnhq/tarn/internal/errclass"
)

// KeyColumn is the Parquet column path the index reads keys back from:
// the raw Kafka key in Tarn's _kafka column (DESIGN.md, "Kafka metadata
// column"), decoded again by the caller's KeyFunc.
const KeyColumn = "_kafka.key"

// ErrIndexMismatch reports a table whose files contradict an upsert
// table's invariants: two live rows of one key, a key that cannot be
// decoded, a delete file the index cannot apply.
var ErrIndexMismatch = errclass.New(errclass.Internal, "upsert: table does not match its key index")

// KeyFunc returns the canonical key of a raw Kafka record key (nil for a
// record without one).
type KeyFunc func(ctx context.Context, raw []byte) (string, error)

// RowKeyFunc returns the key of row i of rec, the columns RebuildFrom
// read from a data file (top-level columns named as in the table; their
// order is the file's).
type RowKeyFunc func(ctx context.Context, rec arrow.RecordBatch, i int) (string, error)

// Rebuild reads the index of tbl's current snapshot from its files: for
// every live data file (iceberg-go's scan planning), the key of each row
// at its position (KeyColumn, through keyOf), minus the positions the
// file's position deletes remove.
//
// Errors: ErrIndexMismatch (wrapped with the file and position: two live
// rows of one key, a row whose key keyOf refuses, an equality delete or a
// deletion vector); I/O and planning errors, wrapped.
func Rebuild(ctx context.Context, tbl *table.Table, keyOf KeyFunc) (*Index, error) {
	return RebuildFrom(ctx, tbl, []string{KeyColumn}, func(ctx context.Context, rec arrow.RecordBatch, i int) (string, error) {
		kafka, ok := rec.Column(0).(*array.Struct)
		if !ok || kafka.NumField() != 1 {
			return "", fmt.Errorf("%s is not readable as a struct", KeyColumn)
		}
		keys, ok := kafka.Field(0).(*array.Binary)
		if !ok {
			return "", fmt.Errorf("%s is %s, not binary", KeyColumn, kafka.Field(0).DataType())
		}
		var raw []byte
		if keys.IsValid(i) && kafka.IsValid(i) {
			raw = keys.Value(i)
		}
		return keyOf(ctx, raw)
	})
}

// RebuildFrom is Rebuild with the keys computed by keyOf from the data
// files' columns at the dotted Parquet paths columns (a table keyed by
// value columns, say, rather than by the Kafka key). Errors: those of
// Rebuild.
func RebuildFrom(ctx context.Context, tbl *table.Table, columns []string, keyOf RowKeyFunc) (*Index, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return NewIndex(-1), nil
	}
	ix := NewIndex(snap.SnapshotID)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("upsert: plan the files of snapshot %d: %w", snap.SnapshotID, err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	// A partition-scoped delete file applies to several data files: read
	// each once.
	read := map[string]map[string][]int64{}
	for _, task := range tasks {
		deleted := map[int64]bool{}
		for _, df := range task.DeleteFiles {
			if df.ContentType() != iceberg.EntryContentPosDeletes || df.FileFormat() != iceberg.ParquetFile {
				return nil, fmt.Errorf("%w: delete file %s (%s, %s): upsert tables carry Parquet position deletes only",
					ErrIndexMismatch, df.FilePath(), df.ContentType(), df.FileFormat())
			}
			byFile, ok := read[df.FilePath()]
			if !ok {
				if byFile, err = readPositionDeletes(ctx, fsys, df.FilePath()); err != nil {
					return nil, err
				}
				read[df.FilePath()] = byFile
			}
			for _, p := range byFile[task.File.FilePath()] {
				deleted[p] = true
			}
		}
		if err := indexFile(ctx, ix, fsys, task.File.FilePath(), deleted, columns, keyOf); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

// readPositionDeletes returns a position delete file's positions per data
// file path.
func readPositionDeletes(ctx context.Context, fsys icebergio.IO, path string) (map[string][]int64, error) {
	out := map[string][]int64{}
	err := readColumns(ctx, fsys, path, []string{"file_path", "pos"}, func(rec arrow.RecordBatch) error {
		paths, ok1 := rec.Column(0).(*array.String)
		pos, ok2 := rec.Column(1).(*array.Int64)
		if !ok1 || !ok2 {
			return fmt.Errorf("%w: position delete file %s has columns %s, %s", ErrIndexMismatch, path, rec.Column(0).DataType(), rec.Column(1).DataType())
		}
		for i := range paths.Len() {
			out[paths.Value(i)] = append(out[paths.Value(i)], pos.Value(i))
		}
		return nil
	})
	return out, err
}

// indexFile puts the key of every row of data file path not in deleted.
func indexFile(ctx context.Context, ix *Index, fsys icebergio.IO, path string, deleted map[int64]bool, columns []string, keyOf RowKeyFunc) error {
	var pos int64
	return readColumns(ctx, fsys, path, columns, func(rec arrow.RecordBatch) error {
		for i := range int(rec.NumRows()) {
			p := pos
			pos++
			if deleted[p] {
				continue
			}
			key, err := keyOf(ctx, rec, i)
			if err != nil {
				return fmt.Errorf("%w: data file %s position %d: %w", ErrIndexMismatch, path, p, err)
			}
			if f, q, dup := ix.Lookup(key); dup {
				return fmt.Errorf("%w: key %q is live at %s position %d and at %s position %d", ErrIndexMismatch, key, f, q, path, p)
			}
			ix.put(key, path, p)
		}
		return nil
	})
}

// readColumns reads the named leaf columns (dotted Parquet paths) of the
// Parquet file at path, in row order, handing each record to fn.
func readColumns(ctx context.Context, fsys icebergio.IO, path string, columns []string, fn func(arrow.RecordBatch) error) error {
	f, err := fsys.Open(path)
	if err != nil {
		return fmt.Errorf("upsert: open %s: %w", path, err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return fmt.Errorf("upsert: read %s: %w", path, err)
	}
	defer pf.Close()
	leaves := make([]int, len(columns))
	for i, c := range columns {
		if leaves[i] = pf.MetaData().Schema.ColumnIndexByName(c); leaves[i] < 0 {
			return fmt.Errorf("%w: %s has no column %s", ErrIndexMismatch, path, c)
		}
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("upsert: read %s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return fmt.Errorf("upsert: read %s: %w", path, err)
	}
	defer rr.Release()
	for rr.Next() {
		if err := fn(rr.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("upsert: read %s: %w", path, err)
	}
	return nil
}

// ColumnValues reads the top-level string or binary column of the data
// file at path in tbl's warehouse and returns its values at positions
// (0-based rows), as bytes; a null value, or a position past the file's
// end, is absent from the map. It reads the whole column once: callers
// batch their positions per file.
//
// Errors: ErrIndexMismatch when the file lacks the column or it is of
// another type; I/O errors, wrapped.
func ColumnValues(ctx context.Context, tbl *table.Table, path, column string, positions []int64) (map[int64][]byte, error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	want := make(map[int64]bool, len(positions))
	for _, p := range positions {
		want[p] = true
	}
	out := make(map[int64][]byte, len(positions))
	var pos int64
	err = readColumns(ctx, fsys, path, []string{column}, func(rec arrow.RecordBatch) error {
		col := rec.Column(0)
		for i := range col.Len() {
			p := pos
			pos++
			if !want[p] || col.IsNull(i) {
				continue
			}
			switch a := col.(type) {
			case *array.String:
				out[p] = []byte(a.Value(i))
			case *array.LargeString:
				out[p] = []byte(a.Value(i))
			case *array.Binary:
				out[p] = bytes.Clone(a.Value(i))
			case *array.LargeBinary:
				out[p] = bytes.Clone(a.Value(i))
			default:
				return fmt.Errorf("%w: data file %s: column %s is %s, not a string or binary", ErrIndexMismatch, path, column, col.DataType())
			}
		}
		return nil
	})
	return out, err
}
