package sink_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/offsets"
)

// TestParquetFilesAreZstdWithFieldIDs: the data files the sink commits are
// Parquet, every column chunk zstd-compressed (iceberg-go's default for
// write.parquet.compression-codec, which Tarn's tables do not override),
// every field carrying its Iceberg field ID, and the data file carries
// column statistics.
func TestParquetFilesAreZstdWithFieldIDs(t *testing.T) {
	h := newHarness(t, nil)
	s := h.open(nil)
	w, err := s.Write(h.ctx, h.plan(offsets.Offsets{}, map[int32]int{0: 50, 1: 50}, 30))
	require.NoError(t, err)
	require.NoError(t, s.CommitWritten(h.ctx, w))
	require.NotEmpty(t, w.Files)

	wantIDs := map[string]int32{"_kafka": 1, "_kafka.partition": 2, "_kafka.offset": 3, "v": 4}
	for _, df := range w.Files {
		assert.Equal(t, iceberg.ParquetFile, df.FileFormat())
		rdr, err := file.OpenParquetFile(localPath(df.FilePath()), false)
		require.NoError(t, err)
		md := rdr.MetaData()
		for rg := range md.NumRowGroups() {
			g := md.RowGroup(rg)
			for c := range g.NumColumns() {
				cc, err := g.ColumnChunk(c)
				require.NoError(t, err)
				assert.Equal(t, compress.Codecs.Zstd, cc.Compression(), "column %s", cc.PathInSchema())
			}
		}
		assert.Equal(t, wantIDs, fieldIDs(md.Schema.Root(), ""))
		require.NoError(t, rdr.Close())

		// Column statistics by field ID. iceberg-go keeps only counts for
		// fields inside a struct (_kafka.*); top-level v has bounds.
		assert.Equal(t, int64(100), df.Count())
		assert.Equal(t, map[int]int64{2: 100, 3: 100, 4: 100}, df.ValueCounts())
		assert.Equal(t, []byte("p0-o0"), df.LowerBoundValues()[4])
		assert.Equal(t, []byte("p1-o9"), df.UpperBoundValues()[4])
	}
}

func fieldIDs(g *schema.GroupNode, prefix string) map[string]int32 {
	out := map[string]int32{}
	for i := range g.NumFields() {
		n := g.Field(i)
		name := prefix + n.Name()
		out[name] = n.FieldID()
		if sub, ok := n.(*schema.GroupNode); ok {
			maps.Copy(out, fieldIDs(sub, name+"."))
		}
	}
	return out
}

// TestRowPositionsFollowBatchOrder pins the row-position contract of the
// package doc, on which a later upsert index mapping key → (file,
// position) relies: a file holds its rows in batch order, and for each
// partition value its rows fill its files one after another in the order
// of Written.Files. A 1-byte target file size rolls a new file after every
// Arrow record, so each partition spans several files.
func TestRowPositionsFollowBatchOrder(t *testing.T) {
	byKafkaPartition := iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{2}, FieldID: 1000, Name: "kafka_partition", Transform: iceberg.IdentityTransform{},
	})
	cases := []struct {
		name string
		spec *iceberg.PartitionSpec
	}{
		{"unpartitioned", nil},
		{"identity(_kafka.partition)", &byKafkaPartition},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.spec)
			cfg := h.config()
			cfg.TargetFileSizeBytes = 1
			s, err := sink.Open(h.ctx, h.tio, cfg)
			require.NoError(t, err)
			b := h.plan(offsets.Offsets{}, map[int32]int{0: 40, 1: 25, 2: 7}, 9)
			w, err := s.Write(h.ctx, b)
			require.NoError(t, err)
			require.Greater(t, len(w.Files), 3)

			// The batch's rows, in order, grouped by the file's partition
			// value ("" when unpartitioned).
			want := map[string][]key{}
			for _, rec := range b.Records {
				for _, k := range keysOf(rec.Columns()[:1]) {
					want[group(tc.spec, k.P)] = append(want[group(tc.spec, k.P)], k)
				}
			}
			got := map[string][]key{}
			for _, df := range w.Files {
				rows := readKeys(t, h, df.FilePath())
				require.EqualValues(t, df.Count(), len(rows))
				g := ""
				if tc.spec != nil {
					g = group(tc.spec, df.Partition()[1000].(int32))
				}
				// Position i of this file is the next row of its group.
				got[g] = append(got[g], rows...)
			}
			assert.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)))
			for g := range want {
				assert.Equal(t, want[g], got[g], "group %q", g)
			}
			require.NoError(t, s.CommitWritten(h.ctx, w))
			assert.Len(t, h.scan(), 72)
		})
	}
}

func group(spec *iceberg.PartitionSpec, p int32) string {
	if spec == nil {
		return ""
	}
	return string(rune('0' + p))
}

// readKeys reads a data file's rows in file order.
func readKeys(t *testing.T, h *harness, loc string) []key {
	t.Helper()
	rdr, err := file.OpenParquetFile(localPath(loc), false)
	require.NoError(t, err)
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	require.NoError(t, err)
	tbl, err := fr.ReadTable(h.ctx)
	require.NoError(t, err)
	defer tbl.Release()
	return keysOf(tbl.Column(0).Data().Chunks())
}
