package testconnect

import (
	"maps"
	"strconv"
	"strings"

	"github.com/tarnhq/tarn/internal/testpg"
)

// Config is a connector configuration (the body of PUT
// /connectors/{name}/config): property name → value.
type Config map[string]string

// With returns a copy of c with the properties of each of more added, later
// ones winning: PostgresSource(...).With(AvroConverters(url), ExtractNewRecordState()).
func (c Config) With(more ...Config) Config {
	out := maps.Clone(c)
	for _, m := range more {
		maps.Copy(out, m)
	}
	return out
}

// PostgresSource is the tested configuration of Debezium's PostgreSQL
// connector (https://debezium.io/documentation/reference/3.6/connectors/postgresql.html)
// capturing tables ("schema.table") of pg, with name as its topic prefix:
// the changes of table public.t go to topic <name>.public.t, keyed by the
// primary key. It takes one replication slot and one publication, both
// named tarn_<name> (the connector creates them; pgoutput, the server's
// built-in logical decoding plugin, needs no extension), snapshots the
// tables' rows first (snapshot.mode=initial: op "r"), and writes a
// tombstone (null value) after each delete so a compacted topic forgets
// the key. Topics it creates are compacted with 1 partition and
// replication factor 1 (one test broker; use 3 in production). Converters
// are the worker's (JsonConverter with schemas) unless AvroConverters or
// JSONConverters is added.
func PostgresSource(pg *testpg.Server, name string, tables ...string) Config {
	slot := "tarn_" + strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToLower(name))
	return Config{
		"connector.class":             "io.debezium.connector.postgresql.PostgresConnector",
		"tasks.max":                   "1",
		"database.hostname":           pg.Host,
		"database.port":               strconv.Itoa(pg.Port),
		"database.user":               pg.DebeziumUser,
		"database.password":           pg.DebeziumPassword,
		"database.dbname":             pg.Database,
		"topic.prefix":                name,
		"table.include.list":          strings.Join(tables, ","),
		"plugin.name":                 "pgoutput",
		"slot.name":                   slot,
		"publication.name":            slot,
		"publication.autocreate.mode": "filtered",
		"snapshot.mode":               "initial",
		"tombstones.on.delete":        "true",
		// KIP-158 topic creation by the worker, before the first record.
		"topic.creation.default.partitions":         "1",
		"topic.creation.default.replication.factor": "1",
		"topic.creation.default.cleanup.policy":     "compact",
	}
}

// AvroConverters writes keys and values in Avro, registering their schemas
// (subjects <topic>-key and <topic>-value) in the Apicurio registry whose
// Confluent-compatible API root is registryURL (testkafka.Registry.URL),
// in the Confluent wire format: magic byte 0, the 4-byte schema id that
// registryURL's /schemas/ids/{id} serves, the Avro binary body. It uses
// Apicurio's converter (Confluent's is not on Maven Central), which talks
// to Apicurio's own API (/apis/registry/v2):
//   - as-confluent=true: a 4-byte id (Apicurio's own framing has 8 bytes);
//   - use-id=contentId: the id ccompat serves (Apicurio's global id is another);
//   - headers.enabled=false: the id in the value, not in a record header;
//   - dereference-schema=true: every named type inline in one schema, as
//     Confluent's AvroConverter registers it (without it, Debezium's
//     `source` block becomes a schema of its own, subject
//     io.debezium.connector.postgresql.Source, and a reference).
//
// Schemas carry Kafka Connect's connect.name / connect.parameters
// (Apicurio's AvroData is a port of Confluent's).
func AvroConverters(registryURL string) Config {
	native := apicurioURL(registryURL)
	c := Config{}
	for _, side := range []string{"key", "value"} {
		p := side + ".converter"
		c[p] = "io.apicurio.registry.utils.converter.AvroConverter"
		c[p+".apicurio.registry.url"] = native
		c[p+".apicurio.registry.auto-register"] = "true"
		c[p+".apicurio.registry.as-confluent"] = "true"
		c[p+".apicurio.registry.use-id"] = "contentId"
		c[p+".apicurio.registry.headers.enabled"] = "false"
		c[p+".apicurio.registry.dereference-schema"] = "true"
	}
	return c
}

// JSONConverters writes keys and values with Kafka Connect's
// JsonConverter, schemas.enable=true: each is {"schema": ..., "payload":
// ...}; a tombstone's value stays null.
func JSONConverters() Config {
	return Config{
		"key.converter":                  "org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable":   "true",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "true",
	}
}

// ExtractNewRecordState flattens Debezium's envelope with its
// io.debezium.transforms.ExtractNewRecordState transform
// (https://debezium.io/documentation/reference/3.6/transformations/event-flattening.html):
// the value is the row after the change (for a delete: the row before,
// with only the key columns unless REPLICA IDENTITY FULL) plus __op
// (c, r, u, d) and __source_ts_ms (the source commit time, ms), and
// __deleted ("true" for a delete, else "false"); the tombstone after a
// delete is kept (delete.tombstone.handling.mode=rewrite-with-tombstone).
func ExtractNewRecordState() Config {
	return Config{
		"transforms":                                       "unwrap",
		"transforms.unwrap.type":                           "io.debezium.transforms.ExtractNewRecordState",
		"transforms.unwrap.add.fields":                     "op,source.ts_ms",
		"transforms.unwrap.delete.tombstone.handling.mode": "rewrite-with-tombstone",
	}
}
