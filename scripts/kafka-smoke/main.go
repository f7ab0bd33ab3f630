// Command kafka-smoke proves that the test broker (scripts/kafka.sh) and the
// test schema registry (scripts/schema-registry.sh) work together the way
// Tarn's ingest will use them, with the same client library (franz-go):
//
//  1. create a topic with 6 partitions (kadm);
//  2. register an Avro schema under the subject "<topic>-value" and read it
//     back by id (sr);
//  3. produce records in the Confluent wire format (magic byte 0, 4-byte
//     big-endian schema id, Avro binary body) in three Kafka transactions:
//     one committed, one aborted, one committed;
//  4. consume the topic from the start with read_committed isolation and
//     check that exactly the committed records arrive, each decoding to what
//     was sent, and with read_uncommitted that the aborted ones were really
//     written to the log.
//
// Run it through scripts/kafka-smoke.sh, which starts both services. By hand:
//
//	go run ./scripts/kafka-smoke -bootstrap 127.0.0.1:9092 -registry http://127.0.0.1:8081/apis/ccompat/v7
//
// -registry fake uses franz-go's in-process srfake instead of a real registry.
// Exit status 0 and a last line "kafka-smoke: OK ..." mean it all held.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// smokeSchema is the Avro schema registered under "<topic>-value".
const smokeSchema = `{"type":"record","name":"SmokeRecord","namespace":"dev.tarn.smoke","fields":[` +
	`{"name":"id","type":"long"},{"name":"label","type":"string"},{"name":"amount","type":"double"}]}`

type smokeRecord struct {
	ID     int64
	Label  string
	Amount float64
}

// encodeAvro writes r as Avro binary for smokeSchema: long = zig-zag varint,
// string = long length + UTF-8 bytes, double = 8 bytes little-endian.
func encodeAvro(v any) ([]byte, error) {
	r, ok := v.(smokeRecord)
	if !ok {
		return nil, fmt.Errorf("encode: unexpected %T", v)
	}
	b := binary.AppendUvarint(nil, zigzag(r.ID))
	b = binary.AppendUvarint(b, zigzag(int64(len(r.Label))))
	b = append(b, r.Label...)
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Amount)), nil
}

func decodeAvro(b []byte, v any) error {
	r, ok := v.(*smokeRecord)
	if !ok {
		return fmt.Errorf("decode: unexpected %T", v)
	}
	id, n := binary.Uvarint(b)
	if n <= 0 {
		return errors.New("decode: bad id varint")
	}
	b = b[n:]
	l, n := binary.Uvarint(b)
	if n <= 0 || unzigzag(l) < 0 || int64(len(b)-n) < unzigzag(l) {
		return errors.New("decode: bad label length")
	}
	b = b[n:]
	label := string(b[:unzigzag(l)])
	b = b[unzigzag(l):]
	if len(b) != 8 {
		return fmt.Errorf("decode: %d bytes left for the double, want 8", len(b))
	}
	*r = smokeRecord{ID: unzigzag(id), Label: label, Amount: math.Float64frombits(binary.LittleEndian.Uint64(b))}
	return nil
}

func zigzag(n int64) uint64   { return uint64(n<<1) ^ uint64(n>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

func main() {
	bootstrap := flag.String("bootstrap", os.Getenv("KAFKA_BOOTSTRAP"), "broker host:port (default $KAFKA_BOOTSTRAP)")
	registry := flag.String("registry", os.Getenv("SCHEMA_REGISTRY_URL"),
		`Confluent-compatible registry base URL (default $SCHEMA_REGISTRY_URL); "fake" for an in-process srfake`)
	topic := flag.String("topic", fmt.Sprintf("tarn-smoke-%d", time.Now().UnixNano()), "topic to create")
	partitions := flag.Int("partitions", 6, "partitions of the topic")
	timeout := flag.Duration("timeout", 2*time.Minute, "overall deadline")
	flag.Parse()
	if *bootstrap == "" || *registry == "" {
		fmt.Fprintln(os.Stderr, "kafka-smoke: need -bootstrap and -registry (or KAFKA_BOOTSTRAP and SCHEMA_REGISTRY_URL)")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *bootstrap, *registry, *topic, int32(*partitions)); err != nil {
		fmt.Fprintln(os.Stderr, "kafka-smoke: FAIL:", err)
		os.Exit(1)
	}
}

func logf(format string, a ...any) {
	fmt.Printf("kafka-smoke: "+format+"\n", a...)
}

func run(ctx context.Context, bootstrap, registryURL, topic string, partitions int32) error {
	start := time.Now()

	// 1. Topic.
	admCl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	if got := len(td[topic].Partitions); got != int(partitions) {
		return fmt.Errorf("topic %s has %d partitions, want %d", topic, got, partitions)
	}
	logf("created topic %s with %d partitions on %s", topic, partitions, bootstrap)

	// 2. Schema.
	if registryURL == "fake" {
		fake := srfake.New()
		defer fake.Close()
		registryURL = fake.URL()
		logf("using in-process srfake at %s", registryURL)
	}
	rcl, err := sr.NewClient(sr.URLs(registryURL))
	if err != nil {
		return err
	}
	subject := topic + "-value"
	id, err := rcl.RegisterSchema(ctx, subject, sr.Schema{Schema: smokeSchema, Type: sr.TypeAvro}, -1, -1)
	if err != nil {
		return fmt.Errorf("register schema under %s: %w", subject, err)
	}
	back, err := rcl.SchemaByID(ctx, id)
	if err != nil {
		return fmt.Errorf("schema by id %d: %w", id, err)
	}
	if back.Schema != smokeSchema || back.Type != sr.TypeAvro {
		return fmt.Errorf("schema %d read back as %s %q", id, back.Type, back.Schema)
	}
	usages, err := rcl.SchemaUsagesByID(ctx, id)
	if err != nil || len(usages) != 1 || usages[0].Subject != subject {
		return fmt.Errorf("usages of schema %d: %+v, %v", id, usages, err)
	}
	logf("registered Avro schema id %d under subject %s (version %d) at %s", id, subject, usages[0].Version, registryURL)

	var serde sr.Serde
	serde.Register(id, smokeRecord{}, sr.EncodeFn(encodeAvro), sr.DecodeFn(decodeAvro))

	// 3. Transactions: commit, abort, commit. Record i goes to partition i % partitions.
	prod, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID("tarn-smoke-"+topic),
		kgo.TransactionTimeout(30*time.Second),
	)
	if err != nil {
		return err
	}
	defer prod.Close()
	sent := map[int64]smokeRecord{}
	committed := map[int64]bool{}
	txn := func(name string, ids []int64, commit bool) error {
		if err := prod.BeginTransaction(); err != nil {
			return fmt.Errorf("%s: begin: %w", name, err)
		}
		recs := make([]*kgo.Record, 0, len(ids))
		for _, i := range ids {
			r := smokeRecord{ID: i, Label: fmt.Sprintf("%s-%d", name, i), Amount: float64(i) * 1.25}
			v, err := serde.Encode(r)
			if err != nil {
				return err
			}
			sent[i] = r
			committed[i] = commit
			recs = append(recs, &kgo.Record{
				Key:       []byte(fmt.Sprintf("k%d", i)),
				Value:     v,
				Partition: int32(i % int64(partitions)),
				Headers:   []kgo.RecordHeader{{Key: "txn", Value: []byte(name)}},
			})
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("%s: produce: %w", name, err)
		}
		end := kgo.TryAbort
		if commit {
			end = kgo.TryCommit
		}
		if err := prod.EndTransaction(ctx, end); err != nil {
			return fmt.Errorf("%s: end: %w", name, err)
		}
		verb := map[bool]string{true: "committed", false: "aborted"}[commit]
		logf("transaction %s: %d records %s", name, len(ids), verb)
		return nil
	}
	seq := func(from, n int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = from + int64(i)
		}
		return out
	}
	p := int64(partitions)
	if err := txn("first", seq(0, 2*p), true); err != nil {
		return err
	}
	if err := txn("aborted", seq(1000, p), false); err != nil {
		return err
	}
	if err := txn("second", seq(2000, p), true); err != nil {
		return err
	}
	wantCommitted := 0
	for _, c := range committed {
		if c {
			wantCommitted++
		}
	}

	// 4. Consume.
	gotCommitted, err := consume(ctx, bootstrap, topic, kgo.ReadCommitted(), wantCommitted, &serde, sent, partitions)
	if err != nil {
		return fmt.Errorf("read_committed: %w", err)
	}
	for _, r := range gotCommitted {
		if !committed[r.ID] {
			return fmt.Errorf("read_committed returned record %d of the aborted transaction", r.ID)
		}
	}
	logf("read_committed: %d records, exactly the committed ones, none of the aborted transaction", len(gotCommitted))

	// The markers are written asynchronously after EndTransaction returns;
	// read_committed having seen the last transaction means they are all in.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	var hwm []string
	for part := int32(0); part < partitions; part++ {
		o, _ := ends.Lookup(topic, part)
		hwm = append(hwm, fmt.Sprintf("%d:%d", part, o.Offset))
	}
	logf("high watermarks (per partition: its data records + one commit/abort marker per transaction): %s", strings.Join(hwm, " "))

	gotAll, err := consume(ctx, bootstrap, topic, kgo.ReadUncommitted(), len(sent), &serde, sent, partitions)
	if err != nil {
		return fmt.Errorf("read_uncommitted: %w", err)
	}
	logf("read_uncommitted: %d records (the aborted ones are in the log, hidden only by isolation)", len(gotAll))

	if _, err := adm.DeleteTopic(ctx, topic); err != nil {
		return fmt.Errorf("delete topic: %w", err)
	}
	logf("OK topic=%s partitions=%d schema_id=%d committed=%d aborted=%d in %.1fs",
		topic, partitions, id, wantCommitted, len(sent)-wantCommitted, time.Since(start).Seconds())
	return nil
}

// consume reads the topic from the start with the given isolation until it
// has want records, then keeps polling one more second to catch extras. Every
// record must decode (wire format, schema id, Avro) to exactly what was sent,
// sit in partition id % partitions, and come in offset order per partition.
func consume(ctx context.Context, bootstrap, topic string, iso kgo.IsolationLevel, want int,
	serde *sr.Serde, sent map[int64]smokeRecord, partitions int32,
) ([]smokeRecord, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var got []smokeRecord
	seen := map[int64]bool{}
	lastOffset := map[int32]int64{}
	var grace time.Time
	for {
		if len(got) >= want {
			if grace.IsZero() {
				grace = time.Now().Add(time.Second)
			} else if time.Now().After(grace) {
				break
			}
		}
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fetches := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return got, fmt.Errorf("deadline: got %d of %d records", len(got), want)
		}
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				return got, fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		for _, rec := range fetches.Records() {
			if len(rec.Value) < 5 || rec.Value[0] != 0 {
				return got, fmt.Errorf("offset %d in partition %d: not Confluent wire format", rec.Offset, rec.Partition)
			}
			var r smokeRecord
			if err := serde.Decode(rec.Value, &r); err != nil {
				return got, fmt.Errorf("offset %d in partition %d: %w", rec.Offset, rec.Partition, err)
			}
			if r != sent[r.ID] {
				return got, fmt.Errorf("record %d decoded as %+v, sent %+v", r.ID, r, sent[r.ID])
			}
			if seen[r.ID] {
				return got, fmt.Errorf("record %d delivered twice", r.ID)
			}
			if rec.Partition != int32(r.ID%int64(partitions)) {
				return got, fmt.Errorf("record %d in partition %d", r.ID, rec.Partition)
			}
			if last, ok := lastOffset[rec.Partition]; ok && rec.Offset <= last {
				return got, fmt.Errorf("partition %d: offset %d after %d", rec.Partition, rec.Offset, last)
			}
			lastOffset[rec.Partition] = rec.Offset
			seen[r.ID] = true
			got = append(got, r)
		}
	}
	if len(got) != want {
		ids := make([]int64, 0, len(got))
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		return got, fmt.Errorf("got %d records, want %d: ids %v", len(got), want, ids)
	}
	return got, nil
}
