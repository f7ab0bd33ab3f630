package testkafka

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// TestServices starts both services, kills the broker and restarts it on the
// same directory, and checks that topic data, port and cluster id survive.
// It needs Java and Maven, so it runs only with TARN_E2E=1
// (TARN_E2E=1 go test ./internal/testkafka).
func TestServices(t *testing.T) {
	if os.Getenv("TARN_E2E") != "1" {
		t.Skip("set TARN_E2E=1 to start a real Kafka broker and schema registry")
	}
	b := StartBroker(t)
	r := StartRegistry(t)
	// Each phase gets its own budget, counted once its services are up: a
	// start takes up to two minutes on a busy 2-core machine (the scripts
	// bound it themselves), and one 5-minute budget counted from before the
	// first start ran out in the produce after the restart (starts of 109,
	// 60 and 107 s at load average 39).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	rcl := r.Client(t)
	id, err := rcl.RegisterSchema(ctx, "t-value", sr.Schema{Schema: `"string"`, Type: sr.TypeAvro}, -1, -1)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if s, err := rcl.SchemaByID(ctx, id); err != nil || s.Schema != `"string"` {
		t.Fatalf("schema %d: %+v %v", id, s, err)
	}
	registerConcurrently(ctx, t, rcl)

	produce := func(bootstrap string, n int) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic("t"),
			kgo.TransactionalID("testkafka"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	// The commit marker is written asynchronously after EndTransaction
	// returns, so wait for the end offset to reach want.
	endOffset := func(bootstrap string, want int64) int64 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			ends, err := adm.ListEndOffsets(ctx, "t")
			if err != nil {
				t.Fatalf("end offsets: %v", err)
			}
			o, ok := ends.Lookup("t", 0)
			if !ok || o.Err != nil {
				t.Fatalf("end offset of t[0]: %+v", o)
			}
			if o.Offset == want || time.Now().After(deadline) {
				return o.Offset
			}
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	cl.Close()
	produce(b.Bootstrap, 3)
	if got := endOffset(b.Bootstrap, 4); got != 4 { // 3 records + the commit marker
		t.Fatalf("end offset %d, want 4", got)
	}
	awaitTxnComplete(ctx, t, b.Bootstrap, "testkafka")

	b.Kill()
	b2 := StartBrokerAt(t, b.Dir, nil)
	cancel()
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if b2.Bootstrap != b.Bootstrap || b2.ClusterID != b.ClusterID {
		t.Fatalf("restart: %s/%s, was %s/%s", b2.Bootstrap, b2.ClusterID, b.Bootstrap, b.ClusterID)
	}
	produce(b2.Bootstrap, 2)
	if got := endOffset(b2.Bootstrap, 7); got != 7 {
		t.Fatalf("end offset after restart %d, want 7", got)
	}
}

// awaitTxnComplete waits until the coordinator has recorded the end of
// txnID's last transaction (state CompleteCommit) in __transaction_state.
// It pins a flaky end offset: the commit markers are in the partition
// before that record is, and a broker killed in between (seen at load
// average 39) finds the transaction in PrepareCommit when it restarts and
// writes its markers a second time, so the end offset after the restart
// was 8, not 7.
func awaitTxnComplete(ctx context.Context, t *testing.T, bootstrap, txnID string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var state string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		described, err := adm.DescribeTransactions(ctx, txnID)
		if err != nil {
			t.Fatalf("describe transaction %s: %v", txnID, err)
		}
		if state = described[txnID].State; state == "CompleteCommit" {
			return
		}
	}
	t.Fatalf("transaction %s is %q after 30 s, want CompleteCommit", txnID, state)
}

// registerConcurrently registers 8 new schemas at once, as several Kafka
// Connect converters do when their connectors start together. It pins a
// failure of Apicurio 2.4.2 on H2 with its default connection pool: most
// of such requests failed with HTTP 500 ("Timeout trying to lock table",
// "Concurrent update in table SEQUENCES") after waiting 2 s or more each,
// and a Debezium connector whose converter got one died. The registry now
// runs with one database connection (scripts/schema-registry.sh).
func registerConcurrently(ctx context.Context, t *testing.T, rcl *sr.Client) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			schema := fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"f","type":"int"}]}`, i)
			_, errs[i] = rcl.RegisterSchema(ctx, fmt.Sprintf("concurrent-%d-value", i), sr.Schema{Schema: schema, Type: sr.TypeAvro}, -1, -1)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent registration %d: %v", i, err)
		}
	}
}
