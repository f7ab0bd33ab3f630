package sink

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"
)

// The sink takes the day partitioning of Tarn's default spec upon itself
// (a batch of one or two days is cut into runs), and leaves everything
// else to iceberg-go: other transforms, days alternating inside a
// record, and null timestamps.
func TestDayPartitionerSplit(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "_kafka", Required: true, Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 2, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz},
		}}})
	newTable := func(tr iceberg.Transform) *table.Table {
		ps := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "p", Transform: tr})
		md, err := table.NewMetadata(sc, &ps, table.UnsortedSortOrder, "file:///tmp/t", nil)
		require.NoError(t, err)
		return table.New(table.Identifier{"ns", "t"}, md, "file:///tmp/t/metadata/v1.json", nil, nil)
	}
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	require.NoError(t, err)
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	build := func(ts ...*time.Time) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
		defer b.Release()
		st := b.Field(0).(*array.StructBuilder)
		for _, x := range ts {
			st.Append(true)
			if x == nil {
				st.FieldBuilder(0).AppendNull()
			} else {
				st.FieldBuilder(0).(*array.TimestampBuilder).Append(arrow.Timestamp(x.UnixMicro()))
			}
		}
		return b.NewRecordBatch()
	}
	at := func(d time.Duration) *time.Time { x := day.Add(d); return &x }

	require.Nil(t, newDayPartitioner(newTable(iceberg.HourTransform{}), asc))
	p := newDayPartitioner(newTable(iceberg.DayTransform{}), asc)
	require.NotNil(t, p)

	one := build(at(time.Hour), at(2*time.Hour))
	midnight := build(at(-time.Second), at(0), at(time.Second))
	before := build(at(-time.Hour))
	days, ok := p.split([]arrow.RecordBatch{one, midnight, before})
	require.True(t, ok)
	require.Len(t, days, 2)
	d0 := int32(day.Unix() / 86400)
	require.Equal(t, d0, days[0].day)
	require.Equal(t, []int64{2, 2}, []int64{days[0].recs[0].NumRows(), days[0].recs[1].NumRows()})
	require.Equal(t, d0-1, days[1].day)
	require.Equal(t, []int64{1, 1}, []int64{days[1].recs[0].NumRows(), days[1].recs[1].NumRows()})
	for _, d := range days {
		release(d.recs)
	}

	alternating := build(at(0), at(-time.Second), at(time.Second))
	_, ok = p.split([]arrow.RecordBatch{one, alternating})
	require.False(t, ok)
	null := build(at(0), nil)
	_, ok = p.split([]arrow.RecordBatch{null})
	require.False(t, ok)
	release([]arrow.RecordBatch{one, midnight, before, alternating, null})

	require.Equal(t, int32(-1), dayOf(-1))
	require.Equal(t, int32(0), dayOf(0))
	require.Equal(t, int32(-1), dayOf(-microsPerDay))
	require.Equal(t, int32(-2), dayOf(-microsPerDay-1))
}
