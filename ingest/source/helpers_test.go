package source_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tarnhq/tarn/ingest/source"
)

const testTopic = "orders"

// testTimeout bounds every wait in these tests.
const testTimeout = 20 * time.Second

// kafka is a Kafka cluster for a test: kfake in process by default, or a
// real broker (e2e tests); either way reached through brokers.
type kafka struct {
	t       *testing.T
	brokers []string
	fake    *kfake.Cluster // nil for a real broker
	adm     *kadm.Client
	prod    *kgo.Client
}

// newFake starts a one-broker kfake cluster with testTopic of partitions
// partitions.
func newFake(t *testing.T, partitions int32) *kafka {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, testTopic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return newKafka(t, c.ListenAddrs(), c)
}

func newKafka(t *testing.T, brokers []string, fake *kfake.Cluster) *kafka {
	t.Helper()
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.DefaultProduceTopic(testTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(prod.Close)
	return &kafka{t: t, brokers: brokers, fake: fake, adm: kadm.NewClient(prod), prod: prod}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// rec is a record to produce: partition, value and, when not zero, the
// timestamp.
type rec struct {
	p  int32
	v  string
	ts time.Time
}

func (k *kafka) records(rs []rec) []*kgo.Record {
	out := make([]*kgo.Record, len(rs))
	for i, r := range rs {
		out[i] = &kgo.Record{Topic: testTopic, Partition: r.p, Value: []byte(r.v), Timestamp: r.ts}
	}
	return out
}

// produce writes rs (not transactionally) and returns their offsets.
func (k *kafka) produce(rs ...rec) []int64 {
	k.t.Helper()
	res := k.prod.ProduceSync(ctxT(k.t), k.records(rs)...)
	require.NoError(k.t, res.FirstErr())
	offs := make([]int64, len(res))
	for i, r := range res {
		offs[i] = r.Record.Offset
	}
	return offs
}

// values produces n records v0..v(n-1) (prefixed) to partition p.
func (k *kafka) values(p int32, prefix string, n int) {
	k.t.Helper()
	rs := make([]rec, n)
	for i := range rs {
		rs[i] = rec{p: p, v: fmt.Sprintf("%s%d", prefix, i)}
	}
	k.produce(rs...)
}

// txn is a transactional producer.
type txn struct {
	k  *kafka
	cl *kgo.Client
}

func (k *kafka) txnProducer(id string) *txn {
	k.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.brokers...),
		kgo.DefaultProduceTopic(testTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID(id))
	require.NoError(k.t, err)
	k.t.Cleanup(cl.Close)
	return &txn{k: k, cl: cl}
}

// begin starts a transaction and produces rs in it.
func (x *txn) begin(rs ...rec) {
	x.k.t.Helper()
	require.NoError(x.k.t, x.cl.BeginTransaction())
	require.NoError(x.k.t, x.cl.ProduceSync(ctxT(x.k.t), x.k.records(rs)...).FirstErr())
}

// end commits or aborts the open transaction.
func (x *txn) end(commit bool) {
	x.k.t.Helper()
	require.NoError(x.k.t, x.cl.EndTransaction(ctxT(x.k.t), kgo.TransactionEndTry(commit)))
}

// run produces rs in one transaction and commits or aborts it.
func (x *txn) run(commit bool, rs ...rec) {
	x.k.t.Helper()
	x.begin(rs...)
	x.end(commit)
}

// createPartitions adds n partitions to the topic, and replaces the
// producer so that it knows them (a client refreshes metadata on its own
// only every few minutes).
func (k *kafka) createPartitions(n int) {
	k.t.Helper()
	res, err := k.adm.CreatePartitions(ctxT(k.t), n, testTopic)
	require.NoError(k.t, err)
	require.NoError(k.t, res.Error())
	fresh := newKafka(k.t, k.brokers, k.fake)
	k.prod, k.adm = fresh.prod, fresh.adm
}

// waitHighWatermark waits until p's high watermark is want. A real
// broker writes transaction markers a moment after EndTransaction
// returns; tests that want fixed offsets wait for the marker this way.
func (k *kafka) waitHighWatermark(p int32, want int64) {
	k.t.Helper()
	eventually(k.t, fmt.Sprintf("partition %d high watermark %d", p, want), func() bool {
		ends, err := k.adm.ListEndOffsets(ctxT(k.t), testTopic)
		require.NoError(k.t, err)
		o, ok := ends.Lookup(testTopic, p)
		return ok && o.Err == nil && o.Offset == want
	})
}

// deleteRecords moves p's log start to before (kadm DeleteRecords).
func (k *kafka) deleteRecords(p int32, before int64) {
	k.t.Helper()
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: testTopic, Partition: p, At: before, LeaderEpoch: -1})
	res, err := k.adm.DeleteRecords(ctxT(k.t), os)
	require.NoError(k.t, err)
	require.NoError(k.t, res.Error())
}

// failRequests makes the next n requests of kind key fail: with code in
// every topic or partition of the response for Fetch, ListOffsets and
// Metadata, or, with a nil code, for any kind, by closing the connection
// (a network failure). Fetch errors reach a partition only when the
// request lists it, so tests failing fetches run without fetch sessions
// (kgo.DisableFetchSessions).
func (k *kafka) failRequests(key kmsg.Key, n int, code *kerr.Error) {
	k.t.Helper()
	require.NotNil(k.t, k.fake, "failRequests needs kfake")
	var mu sync.Mutex
	left := n
	k.fake.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		if left == 0 {
			k.fake.DropControl()
			return nil, nil, false
		}
		left--
		if left > 0 {
			k.fake.KeepControl()
		}
		if code == nil {
			return nil, errors.New("injected connection failure"), true
		}
		return errorResponse(req, code.Code), nil, true
	})
}

// failPartition is like failRequests(kmsg.Fetch, n, code) but fails only
// partition p of fetches that ask for it; other partitions are served.
func (k *kafka) failFetchOf(p int32, n int, code *kerr.Error) {
	k.t.Helper()
	var mu sync.Mutex
	left := n
	k.fake.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		fr := req.(*kmsg.FetchRequest)
		asks := false
		for _, t := range fr.Topics {
			for _, fp := range t.Partitions {
				asks = asks || fp.Partition == p
			}
		}
		if left == 0 {
			k.fake.DropControl()
			return nil, nil, false
		}
		k.fake.KeepControl()
		if !asks {
			return nil, nil, false
		}
		left--
		resp := errorResponse(req, code.Code).(*kmsg.FetchResponse)
		for i := range resp.Topics {
			keep := resp.Topics[i].Partitions[:0]
			for _, rp := range resp.Topics[i].Partitions {
				if rp.Partition == p {
					keep = append(keep, rp)
				}
			}
			resp.Topics[i].Partitions = keep
		}
		return resp, nil, true
	})
}

// errorResponse answers req with code in every topic or partition.
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.Version = r.Version
		for _, t := range r.Topics {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.ListOffsetsRequest:
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		resp.Version = r.Version
		for _, t := range r.Topics {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.MetadataRequest:
		resp := r.ResponseKind().(*kmsg.MetadataResponse)
		resp.Version = r.Version
		for _, t := range r.Topics {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	panic(fmt.Sprintf("errorResponse: %T not supported; fail it with a nil code", req))
}

// logBuffer is a concurrency-safe sink for a JSON slog logger.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// open opens a Source on k with start, a 50 ms partition refresh and a
// logger writing into the returned buffer; opts are appended.
func (k *kafka) open(start map[int32]int64, opts ...kgo.Opt) (*source.Source, *logBuffer) {
	k.t.Helper()
	s, logs, err := k.tryOpen(start, opts...)
	require.NoError(k.t, err)
	return s, logs
}

func (k *kafka) tryOpen(start map[int32]int64, opts ...kgo.Opt) (*source.Source, *logBuffer, error) {
	return k.tryOpenConfig(nil, start, opts...)
}

// tryOpenConfig is tryOpen with change applied to the Config.
func (k *kafka) tryOpenConfig(change func(*source.Config), start map[int32]int64, opts ...kgo.Opt) (*source.Source, *logBuffer, error) {
	logs := &logBuffer{}
	cfg := source.Config{
		Brokers:          k.brokers,
		Topic:            testTopic,
		PartitionRefresh: 50 * time.Millisecond,
		Logger:           slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		// Short fetch waits so tests that expect nothing do not wait
		// for the broker's long poll; metadata (new partitions) cached
		// for 50 ms instead of 5 s.
		Opts: append([]kgo.Opt{kgo.FetchMaxWait(200 * time.Millisecond), kgo.MetadataMinAge(50 * time.Millisecond)}, opts...),
	}
	if change != nil {
		change(&cfg)
	}
	s, err := source.Open(ctxT(k.t), cfg, start)
	if err == nil {
		k.t.Cleanup(s.Close)
	}
	return s, logs, err
}

// pollN polls until at least n records arrived and requires exactly n.
func pollN(t *testing.T, s *source.Source, n int) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		recs, err := s.Poll(ctx)
		require.NoError(t, err, "after %d of %d records: %v", len(got), n, got)
		got = append(got, recs...)
	}
	require.Len(t, got, n, "records: %v", byPartition(got))
	return got
}

// pollNone requires that Poll returns nothing within d.
func pollNone(t *testing.T, s *source.Source, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	recs, err := s.Poll(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Empty(t, recs)
}

// got is a returned record: offset and value.
type got struct {
	Off int64
	V   string
}

// byPartition groups records by partition, in the order returned.
func byPartition(recs []*kgo.Record) map[int32][]got {
	out := map[int32][]got{}
	for _, r := range recs {
		out[r.Partition] = append(out[r.Partition], got{r.Offset, string(r.Value)})
	}
	return out
}

// seq returns records prefix+i at offsets from+i for i in [lo, hi).
func seq(prefix string, from int64, lo, hi int) []got {
	var out []got
	for i := lo; i < hi; i++ {
		out = append(out, got{from + int64(i-lo), fmt.Sprintf("%s%d", prefix, i)})
	}
	return out
}

// eventually polls cond every 10 ms until it holds or testTimeout passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, testTimeout, 10*time.Millisecond, what)
}
