package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tarnhq/tarn/ingest/jsonschema"
	"github.com/tarnhq/tarn/ingest/protobuf"
	"github.com/tarnhq/tarn/internal/produce"
)

// Value formats of `tarn produce`, named as `tarn topics enable --format`
// names them.
const (
	formatAvro       = "avro"
	formatProtobuf   = "protobuf"
	formatJSONSchema = "json-schema"
	formatJSON       = "json"
)

// Input formats of `tarn produce`.
const (
	inputJSON    = "json"
	inputCSV     = "csv"
	inputParquet = "parquet"
)

// registryTimeout bounds one registry request of `tarn produce`: a
// registry parses and checks a new schema before it answers (franz-go's
// default is 5 s).
const registryTimeout = 30 * time.Second

type produceConfig struct {
	kafka       kafkaConfig
	input       string
	inputFormat string
	format      string
	schemaFile  string
	subject     string
	message     string
	keyField    string
	tombstone   bool
	rate        int
	count       int64
}

func newProduceCmd() *cobra.Command {
	var cfg produceConfig
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce test records to a Kafka topic: JSON lines, CSV or Parquet, as Avro, Protobuf, JSON Schema or plain JSON",
		Long: `Produce records to TOPIC, read from --input: JSON lines (one object per
line; the default, also on stdin), CSV with a header row, or Parquet. With
--schema-file the values are written in the Confluent wire format (magic
byte, schema id, body) for Avro (.avsc), Protobuf (.proto) or JSON Schema
(.json): the schema is registered under --subject (default TOPIC-value) in
--schema-registry-url, or its id looked up when the subject has it already.
Without one, values are plain JSON objects (a json topic, no registry).

The key of each record is the value of --key-field (as text), none when
unset. With --tombstone each input row becomes a tombstone instead: its
key and a null value, which an upsert or debezium topic reads as a delete
of that key (rpk's and kcat's -Z). --rate paces the records (default: as fast as the broker takes
them); --count produces that many, starting the input over at its end.

The Kafka and registry flags are those of tarn serve, and like them are
read from TARN_* variables too (--kafka-brokers is TARN_KAFKA_BROKERS).`,
		Example: `  tarn produce orders --schema-file orders.avsc --input orders.jsonl --key-field id
  tarn produce clicks --input clicks.csv --format json
  tarn produce flights --schema-file flights.proto --input flights.parquet --rate 1000 --count 100000
  echo '{"id": 7}' | tarn produce orders --key-field id --tombstone`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applyEnv(cmd.Flags(), isKafkaFlag); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runProduce(ctx, args[0], cfg, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.input, "input", "-", `file of records: JSON lines, CSV or Parquet ("-": JSON lines on stdin)`)
	f.StringVar(&cfg.inputFormat, "input-format", "", "json (JSON lines), csv or parquet (default: by --input's extension .csv or .parquet, else json)")
	f.StringVar(&cfg.format, "format", "", "avro, protobuf, json-schema or json (default: by --schema-file's extension .avsc, .proto or .json; json without one)")
	f.StringVar(&cfg.schemaFile, "schema-file", "", "the value schema to register (Avro, Protobuf or JSON Schema); with --format json an Iceberg schema JSON that types CSV cells")
	f.StringVar(&cfg.subject, "subject", "", "registry subject of the schema (default TOPIC-value)")
	f.StringVar(&cfg.message, "message", "", "Protobuf: the message to produce, by name or full name (default the file's first)")
	f.StringVar(&cfg.keyField, "key-field", "", "field whose value (as text) is the record key (default: no key)")
	f.BoolVar(&cfg.tombstone, "tombstone", false, "produce each row as a tombstone: the --key-field key and a null value (deletes the key in an upsert table)")
	f.IntVar(&cfg.rate, "rate", 0, "records per second (0: as fast as the broker takes them)")
	f.Int64Var(&cfg.count, "count", 0, "records to produce, starting the input over at its end (0: the input once)")
	cfg.kafka.registerBrokers(f, "Kafka seed brokers, host:port, comma-separated (required)")
	cfg.kafka.registerRegistry(f, "Confluent-compatible schema registry URL(s), comma-separated (needed with --schema-file)")
	return cmd
}

// validate resolves the formats from the file names and checks the
// flags, naming the one at fault.
func (c *produceConfig) validate() error {
	if c.inputFormat == "" {
		switch strings.ToLower(filepath.Ext(c.input)) {
		case ".csv":
			c.inputFormat = inputCSV
		case ".parquet":
			c.inputFormat = inputParquet
		default:
			c.inputFormat = inputJSON
		}
	}
	switch c.inputFormat {
	case inputJSON, inputCSV:
	case inputParquet:
		if c.input == "-" {
			return errors.New("--input-format parquet needs --input FILE (Parquet is not read from stdin)")
		}
	default:
		return fmt.Errorf("--input-format must be json, csv or parquet, got %q", c.inputFormat)
	}
	if c.format == "" {
		switch strings.ToLower(filepath.Ext(c.schemaFile)) {
		case "":
			c.format = formatJSON
		case ".avsc":
			c.format = formatAvro
		case ".proto":
			c.format = formatProtobuf
		case ".json":
			c.format = formatJSONSchema
		default:
			return fmt.Errorf("--schema-file %s: give --format (avro, protobuf or json-schema): the extension does not say", c.schemaFile)
		}
	}
	switch c.format {
	case formatAvro, formatProtobuf, formatJSONSchema:
		if c.schemaFile == "" {
			return fmt.Errorf("--format %s needs --schema-file", c.format)
		}
		if c.kafka.registryURL == "" {
			return fmt.Errorf("--format %s needs --schema-registry-url (or TARN_SCHEMA_REGISTRY_URL)", c.format)
		}
	case formatJSON:
	default:
		return fmt.Errorf("--format must be avro, protobuf, json-schema or json, got %q", c.format)
	}
	if c.tombstone && c.keyField == "" {
		return errors.New("--tombstone needs --key-field: a tombstone deletes the record's key, so it must have one")
	}
	if c.message != "" && c.format != formatProtobuf {
		return errors.New("--message is for --format protobuf")
	}
	if c.rate < 0 {
		return fmt.Errorf("--rate must not be negative, got %d", c.rate)
	}
	if c.count < 0 {
		return fmt.Errorf("--count must not be negative, got %d", c.count)
	}
	return nil
}

// runProduce produces cfg's input to topic and prints what it did.
func runProduce(ctx context.Context, topic string, cfg produceConfig, stdin io.Reader, stdout io.Writer) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	if cfg.subject == "" {
		cfg.subject = topic + "-value"
	}
	enc, registered, err := cfg.encoder(ctx)
	if err != nil {
		return err
	}
	cl, err := cfg.kafka.client(kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := topicExists(ctx, cl, topic); err != nil {
		return err
	}

	in := &inputs{cfg: cfg, stdin: stdin}
	defer in.close()
	var acked atomic.Int64
	err = produce.Run(ctx, cl, produce.Pace{Rate: cfg.rate, Limit: cfg.count}, func(int64) (*kgo.Record, error) {
		row, err := in.next()
		if err != nil || row == nil {
			return nil, err
		}
		if cfg.inputFormat == inputCSV {
			if err := produce.Coerce(row, enc.Columns()); err != nil {
				return nil, in.at(err)
			}
		}
		key, err := produce.Key(row, cfg.keyField)
		if err != nil {
			return nil, in.at(err)
		}
		if cfg.tombstone {
			return &kgo.Record{Topic: topic, Key: key}, nil
		}
		value, err := enc.Encode(row)
		if err != nil {
			return nil, in.at(err)
		}
		return &kgo.Record{Topic: topic, Key: key, Value: value}, nil
	}, &acked)
	if err != nil {
		return fmt.Errorf("produce to %s (%s acknowledged): %w", topic, counted(acked.Load(), "record"), err)
	}
	if cfg.tombstone {
		registered = "tombstones: keys with null values"
	}
	fmt.Fprintf(stdout, "produced %s to %s (%s)\n", counted(acked.Load(), "record"), topic, registered)
	return nil
}

// topicExists asks the brokers for topic's metadata, letting a broker
// that creates topics on first use (auto.create.topics.enable) create it;
// a topic that neither exists nor is created is an error naming the fix,
// before anything is produced (franz-go would retry it for a while).
func topicExists(ctx context.Context, cl *kgo.Client, topic string) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("kafka metadata of %s: %w", topic, err)
	}
	for _, t := range resp.Topics {
		err := kerr.ErrorForCode(t.ErrorCode)
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("topic %s does not exist, and the brokers do not create topics on first use: create it with `tarn topics create %s`", topic, topic)
		}
		if err != nil && !errors.Is(err, kerr.LeaderNotAvailable) { // being created
			return fmt.Errorf("kafka metadata of %s: %w", topic, err)
		}
	}
	return nil
}

// encoder registers (or looks up) the schema and returns the encoder of
// its values and a description of it ("avro, schema id 3 of subject
// orders-value").
func (cfg produceConfig) encoder(ctx context.Context) (produce.Encoder, string, error) {
	var text []byte
	if cfg.schemaFile != "" {
		var err error
		if text, err = os.ReadFile(cfg.schemaFile); err != nil {
			return nil, "", fmt.Errorf("--schema-file: %w", err)
		}
	}
	if cfg.format == formatJSON {
		if text == nil {
			return produce.NewJSON(nil), "plain JSON, no schema", nil
		}
		cols, err := produce.ParseColumns(text)
		if err != nil {
			return nil, "", fmt.Errorf("--schema-file %s: %w", cfg.schemaFile, err)
		}
		return produce.NewJSON(cols), "plain JSON", nil
	}

	// Compile first: a schema that cannot become a table is refused
	// before it reaches the registry.
	var (
		typ     sr.SchemaType
		newEnc  func(id int) (produce.Encoder, error)
		compErr error
	)
	switch cfg.format {
	case formatAvro:
		typ = sr.TypeAvro
		sc, err := hamba.Parse(string(text))
		compErr = err
		newEnc = func(id int) (produce.Encoder, error) {
			a, err := produce.NewAvro(sc, id)
			if a != nil {
				a.Lenient = cfg.inputFormat == inputCSV
			}
			return a, err
		}
	case formatProtobuf:
		typ = sr.TypeProtobuf
		fd, err := protobuf.Compile(ctx, string(text), nil)
		compErr = err
		var md protoreflect.MessageDescriptor
		if err == nil {
			md, compErr = protoMessage(fd, cfg.message)
		}
		newEnc = func(id int) (produce.Encoder, error) { return produce.NewProtobuf(md, id) }
	case formatJSONSchema:
		typ = sr.TypeJSON
		s, err := jsonschema.Compile(string(text), nil)
		compErr = err
		newEnc = func(id int) (produce.Encoder, error) { return produce.NewJSONSchema(s, id) }
	}
	if compErr != nil {
		return nil, "", fmt.Errorf("--schema-file %s: %w", cfg.schemaFile, compErr)
	}
	if _, err := newEnc(0); err != nil { // the mapping to a table
		return nil, "", fmt.Errorf("--schema-file %s: %w", cfg.schemaFile, err)
	}
	rc, err := cfg.kafka.registry(sr.HTTPClient(&http.Client{Timeout: registryTimeout}))
	if err != nil {
		return nil, "", err
	}
	ss, err := rc.CreateSchema(ctx, cfg.subject, sr.Schema{Schema: string(text), Type: typ})
	if err != nil {
		return nil, "", fmt.Errorf("register the schema under subject %s: %w", cfg.subject, err)
	}
	enc, err := newEnc(ss.ID)
	if err != nil {
		return nil, "", err
	}
	return enc, fmt.Sprintf("%s, schema id %d of subject %s", cfg.format, ss.ID, cfg.subject), nil
}

// protoMessage finds the message to produce: by name or full name, or
// the file's first.
func protoMessage(fd protoreflect.FileDescriptor, name string) (protoreflect.MessageDescriptor, error) {
	if name == "" {
		if fd.Messages().Len() == 0 {
			return nil, errors.New("the file declares no message")
		}
		return fd.Messages().Get(0), nil
	}
	var found protoreflect.MessageDescriptor
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len() && found == nil; i++ {
			m := ms.Get(i)
			if string(m.Name()) == name || string(m.FullName()) == name {
				found = m
				return
			}
			walk(m.Messages())
		}
	}
	walk(fd.Messages())
	if found == nil {
		return nil, fmt.Errorf("--message %s: no such message in the file", name)
	}
	return found, nil
}

// inputs reads the rows of --input, opening it again at its end when
// more records are wanted (--count).
type inputs struct {
	cfg   produceConfig
	stdin io.Reader
	rows  produce.Rows
	c     io.Closer
	// read counts the rows of the current pass.
	read int64
}

// next returns the next row, nil when the input is done and no more
// records are wanted.
func (in *inputs) next() (produce.Row, error) {
	for {
		if in.rows == nil {
			if err := in.open(); err != nil {
				return nil, err
			}
		}
		row, err := in.rows.Next()
		if err == nil {
			in.read++
			return row, nil
		}
		if !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("--input %s: %w", in.cfg.input, err)
		}
		if in.read == 0 {
			return nil, fmt.Errorf("--input %s: no records", in.cfg.input)
		}
		in.close()
		if in.cfg.count == 0 {
			return nil, nil
		}
		if in.cfg.input == "-" {
			return nil, fmt.Errorf("--count %d needs the input more than once: give --input FILE (stdin is read once)", in.cfg.count)
		}
		in.read = 0
	}
}

func (in *inputs) open() error {
	var r io.Reader = in.stdin
	if in.cfg.input != "-" {
		f, err := os.Open(in.cfg.input)
		if err != nil {
			return fmt.Errorf("--input: %w", err)
		}
		in.c, r = f, f
	}
	switch in.cfg.inputFormat {
	case inputCSV:
		in.rows = produce.CSV(r)
	case inputParquet:
		rows, err := produce.Parquet(r.(*os.File))
		if err != nil {
			return fmt.Errorf("--input %s: %w", in.cfg.input, err)
		}
		in.rows = rows
	default:
		in.rows = produce.JSONLines(r)
	}
	return nil
}

func (in *inputs) close() {
	if in.c != nil {
		_ = in.c.Close()
	}
	in.rows, in.c = nil, nil
}

// at names the record of the input an error is about.
func (in *inputs) at(err error) error {
	return fmt.Errorf("--input %s: record %d: %w", in.cfg.input, in.read, err)
}
