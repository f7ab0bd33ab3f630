package sink

import (
	"context"
	"fmt"
	"net/url"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// microsPerDay converts a timestamp in microseconds to Iceberg's day
// transform: days since 1970-01-01 (UTC), rounded down.
const microsPerDay = 86_400_000_000

// dayPartitioner partitions a batch by day(ts) itself, for the spec Tarn
// gives a topic's table by default: one field, the day transform of a
// microsecond timestamp column reached through structs (_kafka.timestamp).
//
// Why: given a partitioned table, iceberg-go's WriteRecords works out the
// partition of every row on its own, as a Go value boxed per row and
// looked up in a map, about 8 % of tarn serve's ingest CPU and 130 MB
// allocated for 3 M rows (bench/RESULTS.md). Here the day is integer
// division of the Arrow values, a record is cut into runs of one day (a
// batch is normally one run), and each day's runs are written through
// WriteRecords into a view of the table that is unpartitioned and whose
// write.data.path is that partition's directory, exactly where
// iceberg-go would put the files. Each returned DataFile is then rebuilt
// against the table's real spec with the day as its partition value,
// everything else (path, counts, sizes, column statistics, split offsets)
// copied. TestDayPartitionerMatchesIcebergGo checks the result against
// iceberg-go's own partitioned write.
//
// Any other spec, a null timestamp, or an object-storage layout is left to
// iceberg-go (newDayPartitioner returns nil, split reports false).
type dayPartitioner struct {
	spec    iceberg.PartitionSpec
	fieldID int // the partition field's id
	// path are the Arrow column indexes to the timestamp: the top-level
	// column, then a child index per struct level.
	path []int
	// tbl is the table; unpartitioned its metadata with an unpartitioned
	// default spec, the base of each day's view; dataURL the table's data
	// directory, <location>/data.
	tbl           *table.Table
	unpartitioned table.Metadata
	dataURL       *url.URL
}

// newDayPartitioner returns the partitioner of tbl's batches of Arrow
// schema sc, or nil when tbl's spec or layout is not the one it handles.
func newDayPartitioner(tbl *table.Table, sc *arrow.Schema) *dayPartitioner {
	spec := tbl.Spec()
	if spec.NumFields() != 1 || tbl.Properties().GetBool(table.ObjectStoreEnabledKey, table.ObjectStoreEnabledDefault) {
		return nil
	}
	f := spec.Field(0)
	if _, ok := f.Transform.(iceberg.DayTransform); !ok {
		return nil
	}
	src, ok := tbl.Schema().FindFieldByID(f.SourceID())
	if !ok {
		return nil
	}
	switch src.Type.(type) {
	case iceberg.TimestampType, iceberg.TimestampTzType:
	default:
		return nil
	}
	path, ok := arrowPath(tbl.Schema(), sc, f.SourceID())
	if !ok {
		return nil
	}
	root, err := url.Parse(tbl.Location())
	if err != nil {
		return nil
	}
	b, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		return nil
	}
	if b.AddPartitionSpec(iceberg.UnpartitionedSpec, false) != nil || b.SetDefaultSpecID(-1) != nil {
		return nil
	}
	md, err := b.Build()
	if err != nil {
		return nil
	}
	return &dayPartitioner{spec: spec, fieldID: f.FieldID, path: path, tbl: tbl, unpartitioned: md, dataURL: root.JoinPath("data")}
}

// arrowPath finds the Arrow column indexes of field id in sc by the
// field's name path in isc, through struct columns only, ending at a
// microsecond timestamp column.
func arrowPath(isc *iceberg.Schema, sc *arrow.Schema, id int) ([]int, bool) {
	var path []int
	fields := sc.Fields()
	var names []string
	for cur := id; ; {
		f, ok := isc.FindFieldByID(cur)
		if !ok {
			return nil, false
		}
		names = append([]string{f.Name}, names...)
		parent, ok := parentOf(isc, cur)
		if !ok {
			break
		}
		cur = parent
	}
	for i, name := range names {
		idx := -1
		for j, f := range fields {
			if f.Name == name {
				idx = j
				break
			}
		}
		if idx < 0 {
			return nil, false
		}
		path = append(path, idx)
		if i == len(names)-1 {
			ts, ok := fields[idx].Type.(*arrow.TimestampType)
			return path, ok && ts.Unit == arrow.Microsecond
		}
		st, ok := fields[idx].Type.(*arrow.StructType)
		if !ok {
			return nil, false
		}
		fields = st.Fields()
	}
	return nil, false
}

// parentOf returns the id of the struct field that holds field id, false
// for a top-level field.
func parentOf(isc *iceberg.Schema, id int) (int, bool) {
	var find func(fields []iceberg.NestedField, parent int, top bool) (int, bool, bool)
	find = func(fields []iceberg.NestedField, parent int, top bool) (int, bool, bool) {
		for _, f := range fields {
			if f.ID == id {
				return parent, !top, true
			}
			if st, ok := f.Type.(*iceberg.StructType); ok {
				if p, nested, found := find(st.FieldList, f.ID, false); found {
					return p, nested, true
				}
			}
		}
		return 0, false, false
	}
	p, nested, _ := find(isc.Fields(), 0, true)
	return p, nested
}

// dayRuns are the rows of one day: slices of the batch's records, in
// batch order.
type dayRuns struct {
	day  int32
	recs []arrow.RecordBatch
}

// split cuts recs into runs of one day, grouped by day in the order the
// days first appear. The runs are new references (the caller releases
// them). ok is false, and nothing is returned, when a timestamp or a
// struct above it is null or a record has more than maxRunsPerRecord
// runs: the caller leaves that batch to iceberg-go.
func (p *dayPartitioner) split(recs []arrow.RecordBatch) (days []dayRuns, ok bool) {
	at := map[int32]int{}
	add := func(day int32, run arrow.RecordBatch) {
		i, seen := at[day]
		if !seen {
			i = len(days)
			at[day] = i
			days = append(days, dayRuns{day: day})
		}
		days[i].recs = append(days[i].recs, run)
	}
	for _, rec := range recs {
		ts, ok := p.column(rec)
		if !ok {
			for _, d := range days {
				release(d.recs)
			}
			return nil, false
		}
		vals := ts.TimestampValues()
		var cuts [maxRunsPerRecord + 1]int
		runs := 0
		for start := 0; start < len(vals); runs++ {
			if runs == maxRunsPerRecord {
				ok = false
				break
			}
			day := dayOf(int64(vals[start]))
			end := start + 1
			for end < len(vals) && dayOf(int64(vals[end])) == day {
				end++
			}
			cuts[runs+1] = end
			start = end
		}
		if !ok {
			for _, d := range days {
				release(d.recs)
			}
			return nil, false
		}
		for i := range runs {
			start, end := cuts[i], cuts[i+1]
			day := dayOf(int64(vals[start]))
			if start == 0 && end == len(vals) {
				rec.Retain()
				add(day, rec)
			} else {
				add(day, rec.NewSlice(int64(start), int64(end)))
			}
		}
	}
	return days, true
}

// maxRunsPerRecord is the most runs of one day a record is cut into: a
// midnight in it makes two. Records whose days alternate more (late
// records, timestamps a producer set) go to iceberg-go, which gathers each
// day's rows with a take instead of writing many small slices.
const maxRunsPerRecord = 2

// dayOf is Iceberg's day transform of a timestamp in microseconds.
func dayOf(micros int64) int32 {
	d := micros / microsPerDay
	if micros%microsPerDay < 0 {
		d--
	}
	return int32(d)
}

// column returns rec's timestamp column, false if it or a struct above
// it has a null.
func (p *dayPartitioner) column(rec arrow.RecordBatch) (*array.Timestamp, bool) {
	var arr arrow.Array = rec.Column(p.path[0])
	for _, i := range p.path[1:] {
		if arr.NullN() > 0 {
			return nil, false
		}
		st, ok := arr.(*array.Struct)
		if !ok {
			return nil, false
		}
		arr = st.Field(i)
	}
	ts, ok := arr.(*array.Timestamp)
	if !ok || ts.NullN() > 0 {
		return nil, false
	}
	return ts, true
}

// view returns the table to write day's rows through: tbl, unpartitioned,
// writing its data files into the partition's directory.
func (p *dayPartitioner) view(day int32) (*table.Table, error) {
	dir := p.dataURL.JoinPath(p.spec.PartitionToPath(dayStruct{iceberg.Date(day)}, p.tbl.Schema())).String()
	b, err := table.MetadataBuilderFromBase(p.unpartitioned, p.tbl.MetadataLocation())
	if err != nil {
		return nil, err
	}
	if err := b.SetProperties(iceberg.Properties{table.WriteDataPathKey: dir}); err != nil {
		return nil, err
	}
	md, err := b.Build()
	if err != nil {
		return nil, err
	}
	tbl := p.tbl
	return table.New(tbl.Identifier(), md, tbl.MetadataLocation(),
		func(ctx context.Context) (iceio.IO, error) { return tbl.FS(ctx) }, nil), nil
}

// file rebuilds df, written through view(day), as a data file of the
// table's spec in partition day.
func (p *dayPartitioner) file(df iceberg.DataFile, day int32) (iceberg.DataFile, error) {
	b, err := iceberg.NewDataFileBuilder(p.spec, iceberg.EntryContentData, df.FilePath(), df.FileFormat(),
		map[int]any{p.fieldID: iceberg.Date(day)}, map[int]string{p.fieldID: "date"}, nil, df.Count(), df.FileSizeBytes())
	if err != nil {
		return nil, fmt.Errorf("data file %s: %w", df.FilePath(), err)
	}
	b.ColumnSizes(df.ColumnSizes()).ValueCounts(df.ValueCounts()).NullValueCounts(df.NullValueCounts()).
		NaNValueCounts(df.NaNValueCounts()).DistinctValueCounts(df.DistinctValueCounts()).
		LowerBoundValues(df.LowerBoundValues()).UpperBoundValues(df.UpperBoundValues()).
		SplitOffsets(df.SplitOffsets())
	if k := df.KeyMetadata(); k != nil {
		b.KeyMetadata(k)
	}
	if id := df.SortOrderID(); id != nil {
		b.SortOrderID(*id)
	}
	return b.Build(), nil
}

// dayStruct is one partition tuple (a day) for PartitionSpec.PartitionToPath.
type dayStruct [1]any

func (s dayStruct) Size() int          { return 1 }
func (s dayStruct) Get(pos int) any    { return s[pos] }
func (s dayStruct) Set(pos int, v any) { s[pos] = v }
