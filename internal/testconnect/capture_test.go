package testconnect_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

var capture = flag.String("capture", "", "write the change events TestDebeziumPostgresE2E consumed to this directory (the samples of ingest/pipeline/testdata/debezium)")

// capturedRecord is one Kafka record as the samples keep it: key and value
// as written (nil for none; JSON's []byte is base64), and the registry
// schemas their Confluent headers name.
type capturedRecord struct {
	Offset int64  `json:"offset"`
	Key    []byte `json:"key"`
	Value  []byte `json:"value"`
}

// writeCapture writes, per topic, <dir>/<topic>.jsonl (one capturedRecord
// a line) and <dir>/schemas.json (registry schema id → schema text of
// every id a record's key or value names, for the Avro topics).
func writeCapture(t *testing.T, ctx context.Context, rcl *sr.Client, dir string, records map[string][]*kgo.Record) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	schemas := map[int]string{}
	for topic, recs := range records {
		var b strings.Builder
		for _, r := range recs {
			for _, raw := range [][]byte{r.Key, r.Value} {
				var h sr.ConfluentHeader
				if id, _, err := h.DecodeID(raw); err == nil && (strings.HasPrefix(topic, "avro.") || strings.HasPrefix(topic, "flat.")) {
					if _, ok := schemas[id]; !ok {
						s, err := rcl.SchemaByID(ctx, id)
						if err != nil {
							t.Fatal(err)
						}
						schemas[id] = s.Schema
					}
				}
			}
			line, err := json.Marshal(capturedRecord{Offset: r.Offset, Key: r.Key, Value: r.Value})
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, topic+".jsonl"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text, err := json.MarshalIndent(schemas, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "schemas.json"), append(text, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
