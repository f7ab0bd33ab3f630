package protobuf_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	tarnpb "github.com/tarnhq/tarn/ingest/protobuf"
	"github.com/tarnhq/tarn/internal/arrowtest"
	"github.com/tarnhq/tarn/internal/demo"
)

// flightPayloads serializes the 10,000 flights rows of internal/demo as
// testdata/flights.proto Flight messages (date as its wall-clock text).
func flightPayloads(b *testing.B, md protoreflect.MessageDescriptor) [][]byte {
	rows, err := demo.Flights()
	require.NoError(b, err)
	fields := md.Fields()
	out := make([][]byte, len(rows))
	for i, r := range rows {
		m := dynamicpb.NewMessage(md)
		m.Set(fields.ByName("date"), protoreflect.ValueOfString(time.UnixMicro(r.Date).UTC().Format(time.DateTime)))
		m.Set(fields.ByName("delay"), protoreflect.ValueOfInt64(r.Delay))
		m.Set(fields.ByName("distance"), protoreflect.ValueOfInt64(r.Distance))
		m.Set(fields.ByName("origin"), protoreflect.ValueOfString(r.Origin))
		m.Set(fields.ByName("destination"), protoreflect.ValueOfString(r.Destination))
		out[i], err = proto.Marshal(m)
		require.NoError(b, err)
	}

	return out
}

// BenchmarkAppend measures Append on the demo's flights rows (~40 bytes a
// message): one serialized Flight to one Arrow row, with a record cut
// every batchRows rows as a pipeline would. The unmarshal case is
// proto.Unmarshal into a reused dynamicpb message alone, the floor this
// decoder builds on.
//
//	go test -run '^$' -bench Append -benchmem ./ingest/protobuf/
func BenchmarkAppend(b *testing.B) {
	text, err := os.ReadFile("testdata/flights.proto")
	require.NoError(b, err)
	md, err := tarnpb.MessageByIndexes(compile(b, string(text), nil), nil)
	require.NoError(b, err)
	payloads := flightPayloads(b, md)

	b.Run("tarn", func(b *testing.B) {
		dec, err := tarnpb.NewDecoder(md, table(b, md))
		require.NoError(b, err)
		arrowtest.BenchmarkAppend(b, dec.ArrowSchema(), dec.Append, payloads)
	})

	b.Run("unmarshal", func(b *testing.B) {
		m := dynamicpb.NewMessage(md)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if err := proto.Unmarshal(payloads[i%len(payloads)], m); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}
