package arrowtest

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// benchBatchRows is how many rows a benchmark appends before it cuts a
// record, as a pipeline would (its default batch).
const benchBatchRows = 8192

// BenchmarkAppend measures appendRow (a decoder's Append) over payloads,
// round robin, into one RecordBuilder of sc on the default allocator,
// cutting a record every 8192 rows. It reports allocations and rows/s.
func BenchmarkAppend(b *testing.B, sc *arrow.Schema, appendRow func(*array.RecordBuilder, []byte) error, payloads [][]byte) {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := appendRow(rb, payloads[i%len(payloads)]); err != nil {
			b.Fatal(err)
		}
		if (i+1)%benchBatchRows == 0 {
			rb.NewRecordBatch().Release()
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
