package testconnect_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/tarnhq/tarn/internal/testconnect"
	"github.com/tarnhq/tarn/internal/testpg"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from connectors.go")

// TestConnectorConfigs keeps testdata/debezium-*.json, the connector configurations
// that TestDebeziumPostgresE2E runs (for a database on localhost:5432 and a
// registry at http://localhost:8080), equal to what connectors.go builds,
// so that docs can copy a tested config. Regenerate with
// go test ./internal/testconnect -run TestConnectorConfigs -update.
func TestConnectorConfigs(t *testing.T) {
	pg := &testpg.Server{Host: "localhost", Port: 5432, Database: "tarn", DebeziumUser: "debezium", DebeziumPassword: "debezium"}
	for name, cfg := range variants(pg, "http://localhost:8080/apis/ccompat/v7") {
		t.Run(name, func(t *testing.T) {
			got, err := json.MarshalIndent(map[string]any{"name": name, "config": cfg}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "debezium-"+name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("%s differs from connectors.go (rerun with -update):\n%s", path, got)
			}
		})
	}
}

// variants are the connectors TestDebeziumPostgresE2E runs against pg and
// the registry at registryURL, by name (also their topic prefix): the
// envelope in Avro, the envelope in JSON with schemas, and the
// ExtractNewRecordState form in Avro and in JSON with schemas, each
// capturing public.items and public.items_full.
func variants(pg *testpg.Server, registryURL string) map[string]testconnect.Config {
	tables := []string{"public.items", "public.items_full"}
	return map[string]testconnect.Config{
		"avro": testconnect.PostgresSource(pg, "avro", tables...).With(testconnect.AvroConverters(registryURL)),
		"json": testconnect.PostgresSource(pg, "json", tables...).With(testconnect.JSONConverters()),
		"flat": testconnect.PostgresSource(pg, "flat", tables...).With(testconnect.AvroConverters(registryURL),
			testconnect.ExtractNewRecordState()),
		"flatjson": testconnect.PostgresSource(pg, "flatjson", tables...).With(testconnect.JSONConverters(),
			testconnect.ExtractNewRecordState()),
	}
}
