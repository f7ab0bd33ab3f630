package upsert

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/tarnhq/tarn/internal/errclass"
)

// ErrPartitioned is returned for a partitioned table: this version keeps
// the row positions of unpartitioned upsert tables only (docs/upsert.md,
// "Limits").
var ErrPartitioned = errclass.New(errclass.Internal, "upsert tables must be unpartitioned")

// WritePositionDeletes writes, for each data file in deletes (path →
// ascending positions), one file-scoped position delete file (Iceberg
// spec, "Position Delete Files": columns file_path and pos, sorted, with
// referenced_data_file set) into tbl's data directory, and returns the
// delete files to commit with iceberg-go's RowDelta. The files are Parquet
// written by arrow-go with zstd; their manifest entries (statistics, the
// exact file_path bounds) come from table.DataFileFromMetadata. Nothing
// is committed.
//
// Errors: ErrPartitioned; I/O errors, wrapped. Files written before an
// error are returned with it, for the caller to remove.
func WritePositionDeletes(ctx context.Context, tbl *table.Table, deletes map[string][]int64) ([]iceberg.DataFile, error) {
	if len(deletes) == 0 {
		return nil, nil
	}
	if !tbl.Spec().IsUnpartitioned() {
		return nil, ErrPartitioned
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("upsert: the table's file system cannot write")
	}
	locs, err := tbl.LocationProvider()
	if err != nil {
		return nil, err
	}
	write := uuid.New()
	var out []iceberg.DataFile
	// Sorted paths: the files come out in a stable order.
	for i, ref := range slices.Sorted(maps.Keys(deletes)) {
		path := locs.NewDataLocation(fmt.Sprintf("00000-%d-%s-deletes.parquet", i, write))
		df, err := writeDeleteFile(wfs, tbl, path, ref, deletes[ref])
		if df != nil {
			out = append(out, df)
		}
		if err != nil {
			return out, fmt.Errorf("write position deletes of %s: %w", ref, err)
		}
	}
	return out, nil
}

// countingWriter counts the bytes written through it: the file size the
// manifest entry records.
type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func writeDeleteFile(wfs icebergio.WriteFileIO, tbl *table.Table, path, ref string, positions []int64) (iceberg.DataFile, error) {
	rec := deleteRecord(ref, positions)
	defer rec.Release()
	f, err := wfs.Create(path)
	if err != nil {
		return nil, err
	}
	cw := &countingWriter{w: f}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithStats(true))
	pw, err := pqarrow.NewFileWriter(table.PositionalDeleteArrowSchema, cw, props, pqarrow.DefaultWriterProps())
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := pw.Write(rec); err != nil {
		pw.Close()
		f.Close()
		return nil, err
	}
	if err := pw.Close(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	meta, err := pw.FileMetadata()
	if err != nil {
		return nil, err
	}
	return table.DataFileFromMetadata(table.DataFileArgs{
		Schema:             iceberg.PositionalDeleteSchema,
		Spec:               tbl.Spec(),
		Format:             iceberg.ParquetFile,
		Metadata:           meta,
		FilePath:           path,
		FileSize:           cw.n,
		Content:            iceberg.EntryContentPosDeletes,
		Properties:         tbl.Properties(),
		FormatVersion:      tbl.Metadata().Version(),
		ReferencedDataFile: &ref,
	})
}

// deleteRecord is the rows (ref, p) for p in positions.
func deleteRecord(ref string, positions []int64) arrow.RecordBatch {
	mem := memory.DefaultAllocator
	b := array.NewRecordBuilder(mem, table.PositionalDeleteArrowSchema)
	defer b.Release()
	paths := b.Field(0).(*array.StringBuilder)
	pos := b.Field(1).(*array.Int64Builder)
	for _, p := range positions {
		paths.Append(ref)
		pos.Append(p)
	}
	return b.NewRecordBatch()
}
