package tarn.bench;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.storage.Converter;

/**
 * Reads record values in the Confluent wire format (magic byte 0, 4-byte
 * schema id, Avro binary body) with one writer schema given in the
 * converter config ("schema", the Avro schema JSON) and returns each as a
 * schemaless map of field name to Java value, which Apache Iceberg's sink
 * writes by column name. It stands in for Confluent's AvroConverter, which
 * is published only on packages.confluent.io, not Maven Central (bench/ingest
 * resolves everything from Maven Central). local-timestamp-micros longs
 * become LocalDateTime so the sink stores them as Iceberg timestamps.
 * Read-only: fromConnectData is not supported.
 */
public class WireAvroConverter implements Converter {
  private Schema schema;
  private GenericDatumReader<GenericRecord> reader;
  private BinaryDecoder decoder;
  private GenericRecord reuse;

  @Override
  public void configure(Map<String, ?> configs, boolean isKey) {
    Object s = configs.get("schema");
    if (s == null) {
      throw new DataException("WireAvroConverter needs the 'schema' config");
    }
    schema = new Schema.Parser().parse(s.toString());
    reader = new GenericDatumReader<>(schema);
  }

  @Override
  public byte[] fromConnectData(String topic, org.apache.kafka.connect.data.Schema schema, Object value) {
    throw new UnsupportedOperationException("WireAvroConverter only reads");
  }

  @Override
  public SchemaAndValue toConnectData(String topic, byte[] value) {
    if (value == null) {
      return SchemaAndValue.NULL;
    }
    if (value.length < 5 || value[0] != 0) {
      throw new DataException("not in the Confluent wire format");
    }
    try {
      decoder = DecoderFactory.get().binaryDecoder(value, 5, value.length - 5, decoder);
      GenericRecord r = reader.read(null, decoder);
      Map<String, Object> out = new HashMap<>(schema.getFields().size() * 2);
      for (Schema.Field f : schema.getFields()) {
        Object v = r.get(f.pos());
        if (v instanceof CharSequence) {
          v = v.toString();
        } else if (v instanceof Long
            && "local-timestamp-micros".equals(f.schema().getProp("logicalType"))) {
          long us = (Long) v;
          v = LocalDateTime.ofEpochSecond(Math.floorDiv(us, 1_000_000L),
              (int) Math.floorMod(us, 1_000_000L) * 1000, ZoneOffset.UTC);
        } else if (v instanceof LocalDateTime || v instanceof Instant || v instanceof ByteBuffer) {
          // already a Java value the sink understands
        }
        out.put(f.name(), v);
      }
      return new SchemaAndValue(null, out);
    } catch (java.io.IOException e) {
      throw new DataException("decode: " + e.getMessage(), e);
    }
  }
}
