package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Checkpoints are classic V1 checkpoints (PROTOCOL.md "Checkpoints",
// "V1 Spec", "Classic checkpoint"): <version>.checkpoint.parquet, one
// row per action, one struct column per action kind (txn, add, remove,
// metaData, protocol) as "Checkpoint Schema" lays out, stats kept as
// JSON (delta.checkpoint.writeStatsAsJson's default), no stats_parsed;
// remove rows carry no stats or tags. They are written by arrow-go's
// Parquet writer and read back (on a restart) by its reader.

// lastCheckpoint is _delta_log/_last_checkpoint (PROTOCOL.md "Last
// Checkpoint File Schema").
type lastCheckpoint struct {
	Version       int64 `json:"version"`
	Size          int64 `json:"size"`
	SizeInBytes   int64 `json:"sizeInBytes,omitempty"`
	NumOfAddFiles int64 `json:"numOfAddFiles"`
}

var (
	strT = arrow.BinaryTypes.String
	mapT = arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
	lstT = arrow.ListOf(arrow.BinaryTypes.String)
	dvT  = arrow.StructOf(
		nf("storageType", strT), nf("pathOrInlineDv", strT), nf("offset", arrow.PrimitiveTypes.Int32),
		nf("sizeInBytes", arrow.PrimitiveTypes.Int32), nf("cardinality", arrow.PrimitiveTypes.Int64))
	checkpointSchema = arrow.NewSchema([]arrow.Field{
		nf("txn", arrow.StructOf(nf("appId", strT), nf("version", arrow.PrimitiveTypes.Int64), nf("lastUpdated", arrow.PrimitiveTypes.Int64))),
		nf("add", arrow.StructOf(nf("path", strT), nf("partitionValues", mapT), nf("size", arrow.PrimitiveTypes.Int64),
			nf("modificationTime", arrow.PrimitiveTypes.Int64), nf("dataChange", arrow.FixedWidthTypes.Boolean),
			nf("stats", strT), nf("tags", mapT), nf("deletionVector", dvT))),
		nf("remove", arrow.StructOf(nf("path", strT), nf("deletionTimestamp", arrow.PrimitiveTypes.Int64),
			nf("dataChange", arrow.FixedWidthTypes.Boolean), nf("extendedFileMetadata", arrow.FixedWidthTypes.Boolean),
			nf("partitionValues", mapT), nf("size", arrow.PrimitiveTypes.Int64), nf("deletionVector", dvT))),
		nf("metaData", arrow.StructOf(nf("id", strT), nf("name", strT), nf("description", strT),
			nf("format", arrow.StructOf(nf("provider", strT), nf("options", mapT))),
			nf("schemaString", strT), nf("partitionColumns", lstT), nf("configuration", mapT),
			nf("createdTime", arrow.PrimitiveTypes.Int64))),
		nf("protocol", arrow.StructOf(nf("minReaderVersion", arrow.PrimitiveTypes.Int32), nf("minWriterVersion", arrow.PrimitiveTypes.Int32),
			nf("readerFeatures", lstT), nf("writerFeatures", lstT))),
	}, nil)
)

func nf(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true}
}

// Column positions in checkpointSchema.
const (
	colTxn = iota
	colAdd
	colRemove
	colMetaData
	colProtocol
)

// encodeCheckpoint writes st as a checkpoint's Parquet bytes; it returns
// them with the number of actions (rows) and of adds.
func encodeCheckpoint(st *state) (data []byte, actions, adds int64, err error) {
	mem := memory.DefaultAllocator
	rb := array.NewRecordBuilder(mem, checkpointSchema)
	defer rb.Release()
	row := func(col int) *array.StructBuilder {
		for i := range checkpointSchema.NumFields() {
			if i != col {
				rb.Field(i).(*array.StructBuilder).AppendNull()
			}
		}
		sb := rb.Field(col).(*array.StructBuilder)
		sb.Append(true)
		actions++
		return sb
	}
	// protocol and metaData first, as Delta's own checkpoints order them.
	p := row(colProtocol)
	p.FieldBuilder(0).(*array.Int32Builder).Append(int32(st.protocol.MinReaderVersion))
	p.FieldBuilder(1).(*array.Int32Builder).Append(int32(st.protocol.MinWriterVersion))
	appendList(p.FieldBuilder(2).(*array.ListBuilder), st.protocol.ReaderFeatures, st.protocol.MinReaderVersion >= 3)
	appendList(p.FieldBuilder(3).(*array.ListBuilder), st.protocol.WriterFeatures, st.protocol.MinWriterVersion >= 7)

	md := st.metadata
	m := row(colMetaData)
	appendStr(m.FieldBuilder(0), md.ID, true)
	appendStr(m.FieldBuilder(1), md.Name, md.Name != "")
	appendStr(m.FieldBuilder(2), md.Description, md.Description != "")
	f := m.FieldBuilder(3).(*array.StructBuilder)
	f.Append(true)
	appendStr(f.FieldBuilder(0), md.Format.Provider, true)
	appendMap(f.FieldBuilder(1).(*array.MapBuilder), md.Format.Options, true)
	appendStr(m.FieldBuilder(4), md.SchemaString, true)
	appendList(m.FieldBuilder(5).(*array.ListBuilder), md.PartitionColumns, true)
	appendMap(m.FieldBuilder(6).(*array.MapBuilder), md.Configuration, true)
	appendInt64(m.FieldBuilder(7), md.CreatedTime)

	for _, id := range sortedKeys(st.txns) {
		t := st.txns[id]
		r := row(colTxn)
		appendStr(r.FieldBuilder(0), t.AppID, true)
		r.FieldBuilder(1).(*array.Int64Builder).Append(t.Version)
		lu := t.LastUpdated
		appendInt64(r.FieldBuilder(2), &lu)
	}
	for _, k := range sortedFileKeys(st.files) {
		a := st.files[k]
		r := row(colAdd)
		adds++
		appendStr(r.FieldBuilder(0), a.Path, true)
		appendMap(r.FieldBuilder(1).(*array.MapBuilder), a.PartitionValues, true)
		r.FieldBuilder(2).(*array.Int64Builder).Append(a.Size)
		r.FieldBuilder(3).(*array.Int64Builder).Append(a.ModificationTime)
		r.FieldBuilder(4).(*array.BooleanBuilder).Append(a.DataChange)
		appendStr(r.FieldBuilder(5), a.Stats, a.Stats != "")
		appendMap(r.FieldBuilder(6).(*array.MapBuilder), a.Tags, a.Tags != nil)
		appendDV(r.FieldBuilder(7).(*array.StructBuilder), a.DeletionVector)
	}
	for _, k := range sortedFileKeys(st.tombstones) {
		x := st.tombstones[k]
		r := row(colRemove)
		appendStr(r.FieldBuilder(0), x.Path, true)
		r.FieldBuilder(1).(*array.Int64Builder).Append(x.DeletionTimestamp)
		r.FieldBuilder(2).(*array.BooleanBuilder).Append(x.DataChange)
		r.FieldBuilder(3).(*array.BooleanBuilder).Append(x.ExtendedFileMetadata)
		appendMap(r.FieldBuilder(4).(*array.MapBuilder), x.PartitionValues, x.ExtendedFileMetadata)
		size := x.Size
		if x.ExtendedFileMetadata {
			appendInt64(r.FieldBuilder(5), &size)
		} else {
			appendInt64(r.FieldBuilder(5), nil)
		}
		appendDV(r.FieldBuilder(6).(*array.StructBuilder), x.DeletionVector)
	}
	rec := rb.NewRecord()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithAllocator(mem))
	w, err := pqarrow.NewFileWriter(checkpointSchema, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		return nil, 0, 0, err
	}
	if err := w.Write(rec); err != nil {
		_ = w.Close()
		return nil, 0, 0, err
	}
	if err := w.Close(); err != nil {
		return nil, 0, 0, err
	}
	return buf.Bytes(), actions, adds, nil
}

func appendStr(b array.Builder, s string, valid bool) {
	if !valid {
		b.AppendNull()
		return
	}
	b.(*array.StringBuilder).Append(s)
}

func appendInt64(b array.Builder, v *int64) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.(*array.Int64Builder).Append(*v)
}

func appendList(b *array.ListBuilder, vs []string, valid bool) {
	if !valid {
		b.AppendNull()
		return
	}
	b.Append(true)
	for _, v := range vs {
		b.ValueBuilder().(*array.StringBuilder).Append(v)
	}
}

func appendMap(b *array.MapBuilder, m map[string]string, valid bool) {
	if !valid {
		b.AppendNull()
		return
	}
	b.Append(true)
	for _, k := range sortedKeys(m) {
		b.KeyBuilder().(*array.StringBuilder).Append(k)
		b.ItemBuilder().(*array.StringBuilder).Append(m[k])
	}
}

func appendDV(b *array.StructBuilder, dv *DeletionVector) {
	if dv == nil {
		b.AppendNull()
		return
	}
	b.Append(true)
	appendStr(b.FieldBuilder(0), dv.StorageType, true)
	appendStr(b.FieldBuilder(1), dv.PathOrInlineDV, true)
	if dv.Offset != nil {
		b.FieldBuilder(2).(*array.Int32Builder).Append(*dv.Offset)
	} else {
		b.FieldBuilder(2).AppendNull()
	}
	b.FieldBuilder(3).(*array.Int32Builder).Append(dv.SizeInBytes)
	b.FieldBuilder(4).(*array.Int64Builder).Append(dv.Cardinality)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func sortedFileKeys[V any](m map[fileKey]V) []fileKey {
	ks := make([]fileKey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b fileKey) int {
		if a.path != b.path {
			if a.path < b.path {
				return -1
			}
			return 1
		}
		if a.dv < b.dv {
			return -1
		} else if a.dv > b.dv {
			return 1
		}
		return 0
	})
	return ks
}

// decodeCheckpoint reads a V1 checkpoint's Parquet bytes (Tarn's or
// another writer's: columns are found by name, absent ones are null)
// into the actions it holds.
func decodeCheckpoint(ctx context.Context, data []byte) ([]Action, error) {
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 4096)
	defer tr.Release()
	var out []Action
	for tr.Next() {
		rec := tr.Record()
		cols := map[string]*array.Struct{}
		for i, f := range rec.Schema().Fields() {
			if s, ok := rec.Column(i).(*array.Struct); ok {
				cols[f.Name] = s
			}
		}
		for r := range int(rec.NumRows()) {
			a, err := checkpointRow(cols, r)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
	}
	return out, tr.Err()
}

// structCol gives named access to one row of a struct column.
type structCol struct {
	s   *array.Struct
	row int
}

func (c structCol) field(name string) arrow.Array {
	st := c.s.DataType().(*arrow.StructType)
	i, ok := st.FieldIdx(name)
	if !ok {
		return nil
	}
	return c.s.Field(i)
}

func (c structCol) valid(name string) bool {
	a := c.field(name)
	return a != nil && a.IsValid(c.row)
}

func (c structCol) str(name string) string {
	if a, ok := c.field(name).(*array.String); ok && a.IsValid(c.row) {
		return a.Value(c.row)
	}
	return ""
}

func (c structCol) i64(name string) int64 {
	switch a := c.field(name).(type) {
	case *array.Int64:
		if a.IsValid(c.row) {
			return a.Value(c.row)
		}
	case *array.Int32:
		if a.IsValid(c.row) {
			return int64(a.Value(c.row))
		}
	}
	return 0
}

func (c structCol) boolean(name string) bool {
	if a, ok := c.field(name).(*array.Boolean); ok && a.IsValid(c.row) {
		return a.Value(c.row)
	}
	return false
}

func (c structCol) strs(name string) []string {
	a, ok := c.field(name).(*array.List)
	if !ok || !a.IsValid(c.row) {
		return nil
	}
	vals, ok := a.ListValues().(*array.String)
	if !ok {
		return nil
	}
	start, end := a.ValueOffsets(c.row)
	out := make([]string, 0, end-start)
	for i := start; i < end; i++ {
		out = append(out, vals.Value(int(i)))
	}
	return out
}

func (c structCol) strMap(name string) map[string]string {
	a, ok := c.field(name).(*array.Map)
	if !ok || !a.IsValid(c.row) {
		return nil
	}
	keys, kok := a.Keys().(*array.String)
	items, iok := a.Items().(*array.String)
	if !kok || !iok {
		return nil
	}
	start, end := a.ValueOffsets(c.row)
	out := make(map[string]string, end-start)
	for i := start; i < end; i++ {
		if items.IsValid(int(i)) {
			out[keys.Value(int(i))] = items.Value(int(i))
		}
	}
	return out
}

func (c structCol) sub(name string) (structCol, bool) {
	s, ok := c.field(name).(*array.Struct)
	if !ok || !s.IsValid(c.row) {
		return structCol{}, false
	}
	return structCol{s: s, row: c.row}, true
}

func (c structCol) dv(name string) *DeletionVector {
	d, ok := c.sub(name)
	if !ok {
		return nil
	}
	dv := &DeletionVector{StorageType: d.str("storageType"), PathOrInlineDV: d.str("pathOrInlineDv"),
		SizeInBytes: int32(d.i64("sizeInBytes")), Cardinality: d.i64("cardinality")}
	if d.valid("offset") {
		off := int32(d.i64("offset"))
		dv.Offset = &off
	}
	return dv
}

// checkpointRow turns row r of the checkpoint's struct columns into its
// action; a row of an action kind Tarn does not read is an empty Action.
func checkpointRow(cols map[string]*array.Struct, r int) (Action, error) {
	at := func(name string) (structCol, bool) {
		s, ok := cols[name]
		if !ok || !s.IsValid(r) {
			return structCol{}, false
		}
		return structCol{s: s, row: r}, true
	}
	if c, ok := at("add"); ok {
		return Action{Add: &Add{Path: c.str("path"), PartitionValues: c.strMap("partitionValues"), Size: c.i64("size"),
			ModificationTime: c.i64("modificationTime"), DataChange: c.boolean("dataChange"), Stats: c.str("stats"),
			Tags: c.strMap("tags"), DeletionVector: c.dv("deletionVector")}}, nil
	}
	if c, ok := at("remove"); ok {
		return Action{Remove: &Remove{Path: c.str("path"), DeletionTimestamp: c.i64("deletionTimestamp"),
			DataChange: c.boolean("dataChange"), ExtendedFileMetadata: c.boolean("extendedFileMetadata"),
			PartitionValues: c.strMap("partitionValues"), Size: c.i64("size"), DeletionVector: c.dv("deletionVector")}}, nil
	}
	if c, ok := at("txn"); ok {
		return Action{Txn: &Txn{AppID: c.str("appId"), Version: c.i64("version"), LastUpdated: c.i64("lastUpdated")}}, nil
	}
	if c, ok := at("metaData"); ok {
		md := &Metadata{ID: c.str("id"), Name: c.str("name"), Description: c.str("description"),
			SchemaString: c.str("schemaString"), PartitionColumns: c.strs("partitionColumns"),
			Configuration: c.strMap("configuration")}
		if f, ok := c.sub("format"); ok {
			md.Format = Format{Provider: f.str("provider"), Options: f.strMap("options")}
		}
		if c.valid("createdTime") {
			t := c.i64("createdTime")
			md.CreatedTime = &t
		}
		if md.PartitionColumns == nil {
			md.PartitionColumns = []string{}
		}
		return Action{MetaData: md}, nil
	}
	if c, ok := at("protocol"); ok {
		return Action{Protocol: &Protocol{MinReaderVersion: int(c.i64("minReaderVersion")), MinWriterVersion: int(c.i64("minWriterVersion")),
			ReaderFeatures: c.strs("readerFeatures"), WriterFeatures: c.strs("writerFeatures")}}, nil
	}
	return Action{}, nil
}

// encodeLastCheckpoint is _last_checkpoint's JSON.
func encodeLastCheckpoint(lc lastCheckpoint) ([]byte, error) {
	b, err := json.Marshal(lc)
	if err != nil {
		return nil, fmt.Errorf("encode _last_checkpoint: %w", err)
	}
	return b, nil
}
