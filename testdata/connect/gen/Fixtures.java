// Fixtures writes the Kafka Connect fixtures of testdata/connect: rows of
// every Kafka Connect and Debezium semantic type, their schemas built with
// Kafka Connect's and Debezium's own schema builders and their values made
// by Debezium's own conversions (the ones its connectors call), then
// serialized by the real converters:
//
//   types.json.jsonl          Kafka's JsonConverter, schemas.enable=true
//                             (decimal.format=BASE64, the default)
//   types-numeric.json.jsonl  the same with decimal.format=NUMERIC
//   types.avsc                the Avro schema of Apicurio's AvroData (the
//                             schema Apicurio's AvroConverter registers)
//   types.avro.b64            the rows in Avro binary (AvroData's
//                             GenericRecord, Avro's GenericDatumWriter),
//                             base64, one per line
//   envelope.json.jsonl       the first row as a Debezium create event
//                             (io.debezium.data.Envelope), JsonConverter
//
// Run by gen.sh; see there for the classpath.
import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.OffsetTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

import io.apicurio.registry.utils.converter.avro.AvroData;
import io.debezium.data.Bits;
import io.debezium.data.Envelope;
import io.debezium.data.Json;
import io.debezium.data.Uuid;
import io.debezium.data.VariableScaleDecimal;
import io.debezium.data.Xml;
import io.debezium.data.geometry.Geometry;
import io.debezium.data.geometry.Point;
import io.debezium.time.Interval;
import io.debezium.time.MicroDuration;
import io.debezium.time.MicroTime;
import io.debezium.time.MicroTimestamp;
import io.debezium.time.NanoTime;
import io.debezium.time.NanoTimestamp;
import io.debezium.time.Year;
import io.debezium.time.ZonedTime;
import io.debezium.time.ZonedTimestamp;

public class Fixtures {
    static final Schema POINT = Point.builder().build();
    static final Schema GEOMETRY = Geometry.schema();
    static final Schema VSD = VariableScaleDecimal.schema();
    static final Schema VSD_OPT = VariableScaleDecimal.optionalSchema();
    static final Schema BITS = Bits.schema(10);

    static final Schema TYPES = types().build();
    // The envelope's before and after are optional, as Debezium's connectors make them.
    static final Schema TYPES_OPTIONAL = types().optional().build();

    static SchemaBuilder types() {
        return SchemaBuilder.struct().name("tarn.fixtures.Value")
            .field("id", Schema.INT32_SCHEMA)
            .field("connect_date", org.apache.kafka.connect.data.Date.SCHEMA)
            .field("connect_time", org.apache.kafka.connect.data.Time.SCHEMA)
            .field("connect_timestamp", org.apache.kafka.connect.data.Timestamp.SCHEMA)
            .field("connect_decimal", org.apache.kafka.connect.data.Decimal.builder(2)
                    .parameter("connect.decimal.precision", "10").build())
            .field("connect_decimal_unbounded", org.apache.kafka.connect.data.Decimal.schema(3))
            .field("dbz_date", io.debezium.time.Date.schema())
            .field("dbz_time", io.debezium.time.Time.schema())
            .field("dbz_micro_time", MicroTime.schema())
            .field("dbz_nano_time", NanoTime.schema())
            .field("dbz_timestamp", io.debezium.time.Timestamp.schema())
            .field("dbz_micro_timestamp", MicroTimestamp.schema())
            .field("dbz_nano_timestamp", NanoTimestamp.schema())
            .field("dbz_zoned_timestamp", ZonedTimestamp.schema())
            .field("dbz_zoned_time", ZonedTime.schema())
            .field("dbz_variable_scale_decimal", VSD)
            .field("dbz_uuid", Uuid.schema())
            .field("dbz_json", Json.schema())
            .field("dbz_enum", io.debezium.data.Enum.schema("small,medium,large"))
            .field("dbz_enum_set", io.debezium.data.EnumSet.schema("a,b,c"))
            .field("dbz_bits", BITS)
            .field("dbz_year", Year.schema())
            .field("dbz_interval", Interval.schema())
            .field("dbz_micro_duration", MicroDuration.schema())
            .field("dbz_xml", Xml.schema())
            .field("dbz_point", POINT)
            .field("dbz_geometry", GEOMETRY)
            .field("opt_micro_timestamp", MicroTimestamp.builder().optional().build())
            .field("opt_variable_scale_decimal", VSD_OPT)
            .field("dates", SchemaBuilder.array(io.debezium.time.Date.schema()).build())
            .field("stamps", SchemaBuilder.map(Schema.STRING_SCHEMA, MicroTimestamp.schema()).build());
    }

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args[0]);
        List<Struct> rows = List.of(row1(TYPES), row2());

        write(out.resolve("types.json.jsonl"), json(TYPES, rows, "BASE64"));
        write(out.resolve("types-numeric.json.jsonl"), json(TYPES, rows, "NUMERIC"));

        AvroData avro = new AvroData(100);
        org.apache.avro.Schema avsc = avro.fromConnectSchema(TYPES);
        Files.writeString(out.resolve("types.avsc"), avsc.toString(true) + "\n");
        List<String> b64 = new ArrayList<>();
        for (Struct r : rows) {
            Object rec = avro.fromConnectData(TYPES, r);
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            BinaryEncoder enc = EncoderFactory.get().binaryEncoder(buf, null);
            new GenericDatumWriter<Object>(avsc).write(rec, enc);
            enc.flush();
            b64.add(Base64.getEncoder().encodeToString(buf.toByteArray()));
        }
        write(out.resolve("types.avro.b64"), b64);

        Schema source = SchemaBuilder.struct().name("io.debezium.connector.postgresql.Source")
                .field("version", Schema.STRING_SCHEMA)
                .field("connector", Schema.STRING_SCHEMA)
                .field("name", Schema.STRING_SCHEMA)
                .field("ts_ms", Schema.INT64_SCHEMA)
                .field("db", Schema.STRING_SCHEMA)
                .field("schema", Schema.STRING_SCHEMA)
                .field("table", Schema.STRING_SCHEMA)
                .field("lsn", Schema.OPTIONAL_INT64_SCHEMA)
                .build();
        Envelope env = Envelope.defineSchema().withName("tarn.fixtures.Envelope")
                .withRecord(TYPES_OPTIONAL).withSource(source).build();
        Struct src = new Struct(source).put("version", "3.6.1.Final").put("connector", "postgresql")
                .put("name", "tarn").put("ts_ms", 1700000000000L).put("db", "postgres")
                .put("schema", "public").put("table", "types").put("lsn", 24023128L);
        Struct create = env.create(row1(TYPES_OPTIONAL), src, Instant.ofEpochMilli(1700000000456L));
        write(out.resolve("envelope.json.jsonl"), json(env.schema(), List.of(create), "BASE64"));
    }

    // row1 holds one ordinary value of every type.
    static Struct row1(Schema schema) {
        LocalDateTime ldt = LocalDateTime.of(2023, 11, 14, 22, 13, 20, 123_456_789);
        Duration tod = Duration.ofNanos(LocalTime.of(22, 13, 20, 123_456_789).toNanoOfDay());
        Map<String, Long> stamps = new LinkedHashMap<>();
        stamps.put("first", MicroTimestamp.toEpochMicros(ldt, null));
        stamps.put("second", MicroTimestamp.toEpochMicros(LocalDateTime.of(2000, 1, 1, 0, 0), null));
        return new Struct(schema)
                .put("id", 1)
                .put("connect_date", new java.util.Date(LocalDate.of(2023, 11, 14).toEpochDay() * 86_400_000L))
                .put("connect_time", new java.util.Date(80_000_123L))
                .put("connect_timestamp", new java.util.Date(1_700_000_000_123L))
                .put("connect_decimal", new BigDecimal("1234.56"))
                .put("connect_decimal_unbounded", new BigDecimal("98765432109876543210.123"))
                .put("dbz_date", io.debezium.time.Date.toEpochDay(LocalDate.of(2023, 11, 14), null))
                .put("dbz_time", io.debezium.time.Time.toMilliOfDay(tod, false))
                .put("dbz_micro_time", MicroTime.toMicroOfDay(tod, false))
                .put("dbz_nano_time", NanoTime.toNanoOfDay(tod, false))
                .put("dbz_timestamp", io.debezium.time.Timestamp.toEpochMillis(ldt, null))
                .put("dbz_micro_timestamp", MicroTimestamp.toEpochMicros(ldt, null))
                .put("dbz_nano_timestamp", NanoTimestamp.toEpochNanos(ldt, null))
                .put("dbz_zoned_timestamp", ZonedTimestamp.toIsoString(
                        OffsetDateTime.of(2023, 11, 14, 22, 13, 20, 123_456_000, ZoneOffset.ofHours(1)), null))
                .put("dbz_zoned_time", ZonedTime.toIsoString(OffsetTime.of(22, 13, 20, 123_456_000, ZoneOffset.ofHours(1)), null))
                .put("dbz_variable_scale_decimal", VariableScaleDecimal.fromLogical(VSD, new BigDecimal("1234.567")))
                .put("dbz_uuid", "f81d4fae-7dec-11d0-a765-00a0c91e6bf6")
                .put("dbz_json", "{\"a\": [1, 2.50], \"b\": null}")
                .put("dbz_enum", "medium")
                .put("dbz_enum_set", "a,c")
                .put("dbz_bits", Bits.fromBitSet(BITS, BitSet.valueOf(new byte[] {0x05, 0x02})))
                .put("dbz_year", 2023)
                .put("dbz_interval", Interval.toIsoString(1, 2, 3, 4, 5, new BigDecimal("6.78")))
                .put("dbz_micro_duration", MicroDuration.durationMicros(0, 0, 1, 2, 3, 4.5, null))
                .put("dbz_xml", "<a b=\"1\">x</a>")
                .put("dbz_point", Point.createValue(POINT, 1.5, -2.25))
                .put("dbz_geometry", Geometry.createValue(GEOMETRY,
                        Base64.getDecoder().decode("AQEAAAAAAAAAAAD4PwAAAAAAAALA"), 4326))
                .put("opt_micro_timestamp", MicroTimestamp.toEpochMicros(ldt, null))
                .put("opt_variable_scale_decimal", VariableScaleDecimal.fromLogical(VSD_OPT, new BigDecimal("1E+3")))
                .put("dates", List.of(io.debezium.time.Date.toEpochDay(LocalDate.of(1970, 1, 2), null),
                        io.debezium.time.Date.toEpochDay(LocalDate.of(2023, 11, 14), null)))
                .put("stamps", stamps);
    }

    // row2 holds the edges: before the epoch, midnight, negative
    // decimals, a zoned timestamp in UTC, nulls and empty collections.
    static Struct row2() {
        LocalDateTime before = LocalDateTime.of(1969, 12, 31, 23, 59, 59, 999_999_999);
        return new Struct(TYPES)
                .put("id", 2)
                .put("connect_date", new java.util.Date(-86_400_000L))
                .put("connect_time", new java.util.Date(0L))
                .put("connect_timestamp", new java.util.Date(-1L))
                .put("connect_decimal", new BigDecimal("-0.01"))
                .put("connect_decimal_unbounded", new BigDecimal("-0.001"))
                .put("dbz_date", io.debezium.time.Date.toEpochDay(LocalDate.of(1969, 12, 31), null))
                .put("dbz_time", io.debezium.time.Time.toMilliOfDay(Duration.ZERO, false))
                .put("dbz_micro_time", MicroTime.toMicroOfDay(Duration.ofNanos(LocalTime.of(23, 59, 59, 999_999_000).toNanoOfDay()), false))
                .put("dbz_nano_time", NanoTime.toNanoOfDay(Duration.ofNanos(1), false))
                .put("dbz_timestamp", io.debezium.time.Timestamp.toEpochMillis(before, null))
                .put("dbz_micro_timestamp", MicroTimestamp.toEpochMicros(before, null))
                .put("dbz_nano_timestamp", NanoTimestamp.toEpochNanos(before, null))
                .put("dbz_zoned_timestamp", ZonedTimestamp.toIsoString(
                        OffsetDateTime.of(1999, 12, 31, 23, 59, 59, 0, ZoneOffset.UTC), null))
                .put("dbz_zoned_time", ZonedTime.toIsoString(OffsetTime.of(0, 30, 0, 0, ZoneOffset.ofHoursMinutes(5, 30)), null))
                .put("dbz_variable_scale_decimal", VariableScaleDecimal.fromLogical(VSD, new BigDecimal("-0.005")))
                .put("dbz_uuid", "00000000-0000-0000-0000-000000000000")
                .put("dbz_json", "[]")
                .put("dbz_enum", "large")
                .put("dbz_enum_set", "")
                .put("dbz_bits", Bits.fromBitSet(BITS, new BitSet()))
                .put("dbz_year", 1901)
                .put("dbz_interval", Interval.toIsoString(0, 0, 0, 0, 0, new BigDecimal("-1.5")))
                .put("dbz_micro_duration", -1L)
                .put("dbz_xml", "")
                .put("dbz_point", Point.createValue(POINT, 0, 0))
                .put("dbz_geometry", Geometry.createValue(GEOMETRY,
                        Base64.getDecoder().decode("AQEAAAAAAAAAAAAAAAAAAAAAAAAA"), null))
                .put("opt_micro_timestamp", null)
                .put("opt_variable_scale_decimal", null)
                .put("dates", List.of())
                .put("stamps", Map.of());
    }

    static List<String> json(Schema schema, List<Struct> rows, String decimalFormat) {
        JsonConverter c = new JsonConverter();
        c.configure(Map.of("schemas.enable", "true", "decimal.format", decimalFormat), false);
        List<String> lines = new ArrayList<>();
        for (Struct r : rows) {
            lines.add(new String(c.fromConnectData("tarn-fixtures", schema, r), StandardCharsets.UTF_8));
        }
        return lines;
    }

    static void write(Path p, List<String> lines) throws Exception {
        Files.writeString(p, String.join("\n", lines) + "\n");
    }
}
