package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/jsonrow"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/protobuf"
	kafkasource "github.com/tarnhq/tarn/ingest/source"
)

// TestFormats materializes the 10,000 flights rows of testdata encoded in
// each non-Avro format (Avro is every other test's): Protobuf and JSON
// Schema through the registry with format auto (resolved from the subject
// <topic>-value at enable, as the management API does), schemaless JSON
// against a declared Iceberg schema, and raw bytes. Each table's totals
// equal testdata/answers.json (raw: the value bytes round-trip).
func TestFormats(t *testing.T) {
	ctx := context.Background()
	rows := loadFlights(t)
	want := loadAnswers(t)
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(testPartitions, "f-protobuf", "f-json-schema", "f-json", "f-raw"))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	reg := srfake.New()
	t.Cleanup(reg.Close)
	rc, err := sr.NewClient(sr.URLs(reg.URL()))
	require.NoError(t, err)
	prod, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(prod.Close)
	cat, wh := newCatalog(t)

	protoText, err := os.ReadFile(filepath.Join("..", "protobuf", "testdata", "flights.proto"))
	require.NoError(t, err)
	jsText, err := os.ReadFile(filepath.Join("..", "jsonschema", "testdata", "flights.schema.json"))
	require.NoError(t, err)
	declared, err := jsonrow.ParseSchema([]byte(`{"type": "struct", "fields": [
		{"id": 1, "name": "delay", "required": true, "type": "long"},
		{"id": 2, "name": "distance", "required": true, "type": "long"},
		{"id": 3, "name": "origin", "required": false, "type": "string"}]}`))
	require.NoError(t, err)

	var h sr.ConfluentHeader
	encoders := map[pipeline.Format]func() [][]byte{
		pipeline.FormatProtobuf: func() [][]byte {
			ss, err := rc.CreateSchema(ctx, "f-protobuf-value", sr.Schema{Type: sr.TypeProtobuf, Schema: string(protoText)})
			require.NoError(t, err)
			fd, err := protobuf.Compile(ctx, string(protoText), nil)
			require.NoError(t, err)
			md := fd.Messages().ByName("Flight")
			out := make([][]byte, len(rows))
			for i, f := range rows {
				m := dynamicpb.NewMessage(md)
				m.Set(md.Fields().ByName("date"), protoValue(f.Date.Format(time.DateTime)))
				m.Set(md.Fields().ByName("delay"), protoValue(f.Delay))
				m.Set(md.Fields().ByName("distance"), protoValue(f.Distance))
				m.Set(md.Fields().ByName("origin"), protoValue(f.Origin))
				m.Set(md.Fields().ByName("destination"), protoValue(f.Destination))
				body, err := proto.Marshal(m)
				require.NoError(t, err)
				b, err := h.AppendEncode(nil, ss.ID, []int{0})
				require.NoError(t, err)
				out[i] = append(b, body...)
			}
			return out
		},
		pipeline.FormatJSONSchema: func() [][]byte {
			ss, err := rc.CreateSchema(ctx, "f-json-schema-value", sr.Schema{Type: sr.TypeJSON, Schema: string(jsText)})
			require.NoError(t, err)
			out := make([][]byte, len(rows))
			for i, f := range rows {
				body, err := json.Marshal(map[string]any{"date": f.Date.Format(time.RFC3339), "delay": f.Delay,
					"distance": f.Distance, "origin": f.Origin, "destination": f.Destination})
				require.NoError(t, err)
				b, err := h.AppendEncode(nil, ss.ID, nil)
				require.NoError(t, err)
				out[i] = append(b, body...)
			}
			return out
		},
		pipeline.FormatJSON: func() [][]byte {
			out := make([][]byte, len(rows))
			for i, f := range rows {
				// destination is not declared: ignored.
				body, err := json.Marshal(map[string]any{"delay": f.Delay, "distance": f.Distance,
					"origin": f.Origin, "destination": f.Destination})
				require.NoError(t, err)
				out[i] = body
			}
			return out
		},
		pipeline.FormatRaw: func() [][]byte {
			out := make([][]byte, len(rows))
			for i, f := range rows {
				out[i] = fmt.Appendf(nil, "%s,%d,%d", f.Origin, f.Delay, f.Distance)
			}
			return out
		},
	}

	for format, encode := range encoders {
		t.Run(string(format), func(t *testing.T) {
			topic := "f-" + string(format)
			values := encode()
			recs := make([]*kgo.Record, len(values))
			var rawBytes int64
			for i, v := range values {
				recs[i] = &kgo.Record{Topic: topic, Partition: int32(i % testPartitions), Value: v}
				rawBytes += int64(len(v))
			}
			require.NoError(t, prod.ProduceSync(ctx, recs...).FirstErr())

			cfg := pipeline.Config{Topic: topic, Cluster: testCluster, TargetLag: time.Second,
				Table: catalog.Ident{Namespace: catalog.Namespace{"formats"}, Name: topic}}
			switch format {
			case pipeline.FormatJSON:
				cfg.Format, cfg.Schema = format, declared
			case pipeline.FormatRaw:
				cfg.Format = format
			}
			user, resolved, err := pipeline.WriterSchema(ctx, rc, cfg)
			require.NoError(t, err)
			require.Equal(t, format, resolved, "format auto resolves from the subject")
			cfg.Format = resolved
			_, err = pipeline.EnsureTable(ctx, cat, wh, cfg, user)
			require.NoError(t, err)
			p, err := pipeline.New(cfg, pipeline.Deps{Tables: cat.TableIO(wh), Registry: rc,
				OpenSource: func(ctx context.Context, start map[int32]int64) (pipeline.Source, error) {
					return kafkasource.Open(ctx, kafkasource.Config{Brokers: kc.ListenAddrs(), Topic: topic, ControlRecords: true}, start)
				}})
			require.NoError(t, err)
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- p.Run(runCtx) }()
			deadline := time.Now().Add(waitTimeout)
			for p.Status().Rows < int64(len(rows)) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			require.NoError(t, <-done)
			st := p.Status()
			require.EqualValues(t, len(rows), st.Rows, "status %+v", st)
			assert.Empty(t, st.Errors)

			tbl, err := cat.TableIO(wh).LoadTable(ctx, table.Identifier{"formats", topic})
			require.NoError(t, err)
			res, err := tbl.Scan().ToArrowTable(ctx)
			require.NoError(t, err)
			defer res.Release()
			require.EqualValues(t, len(rows), res.NumRows())
			sum := func(name string) (total int64) {
				idx := res.Schema().FieldIndices(name)
				require.Len(t, idx, 1, name)
				for _, c := range res.Column(idx[0]).Data().Chunks() {
					switch a := c.(type) {
					case *array.Int64:
						for i := range a.Len() {
							total += a.Value(i)
						}
					case *array.Binary:
						for i := range a.Len() {
							total += int64(len(a.Value(i)))
						}
					default:
						t.Fatalf("column %s is %T", name, c)
					}
				}
				return total
			}
			if format == pipeline.FormatRaw {
				assert.Equal(t, rawBytes, sum(pipeline.RawValueColumn))
				return
			}
			assert.Equal(t, want.SumDelay, sum("delay"))
			assert.Equal(t, want.SumDistance, sum("distance"))
			if format == pipeline.FormatProtobuf {
				f, _ := tbl.Schema().FindFieldByName("date")
				assert.Equal(t, iceberg.PrimitiveTypes.String, f.Type)
			}
			if format == pipeline.FormatJSONSchema {
				f, _ := tbl.Schema().FindFieldByName("date")
				assert.Equal(t, iceberg.PrimitiveTypes.TimestampTz, f.Type)
			}
		})
	}
}

func protoValue(v any) protoreflect.Value { return protoreflect.ValueOf(v) }
