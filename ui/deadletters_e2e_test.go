package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/demo"
)

// TestE2EConsoleDeadLetters drives a topic in error mode dlq in a real
// headless Chromium: while the demo's records keep flowing, three records
// without the registry's header go to the dead-letter table, and the
// topic's page (refreshing itself) lists them newest first with their
// error kind and their Kafka partition and offset — the ones the
// producer got back — as the management API's dead-letters route reads
// them from the table.
func TestE2EConsoleDeadLetters(t *testing.T) {
	b := newChrome(t)
	f := newFixture(t, false)
	_, err := f.mgr.Enable(t.Context(), topics.TopicConfig{Topic: demo.Topic, Table: "demo.flights", TargetLagMs: 1000, ErrorMode: "dlq"})
	require.NoError(t, err)
	f.keepProducing(t, 40*time.Millisecond)

	b.do(chromedp.Navigate(f.url+"/ui/topics/flights"), chromedp.WaitVisible(chromedp.CSS(`#dead-letters`)))
	assert.Contains(t, b.eval(`document.querySelector('#dead-letters').textContent`), "None yet")

	// Three bad records, one per partition, a second apart in record
	// time: the newest is the last produced.
	base := time.Now().Truncate(time.Millisecond)
	var want []string
	for i := range 3 {
		r := &kgo.Record{Value: []byte("not the registry's wire format"), Partition: int32(i), Timestamp: base.Add(time.Duration(i) * time.Second)}
		require.NoError(t, f.prod.ProduceSync(context.Background(), r).FirstErr())
		want = append([]string{fmt.Sprintf("%d/%d", r.Partition, r.Offset)}, want...)
	}
	b.poll("three dead letters", `document.querySelectorAll('#dead-letters [data-dead-letter]').length === 3`)
	assert.Equal(t, strings.Join(want, ","), b.eval(`Array.from(document.querySelectorAll('#dead-letters [data-dead-letter]')).map(e => e.dataset.deadLetter).join(",")`),
		"newest first, at the producer's partition and offset")
	assert.Equal(t, "bad_header,bad_header,bad_header", b.eval(`Array.from(document.querySelectorAll('#dead-letters [data-field=error-kind]')).map(e => e.textContent).join(",")`))
	assert.Equal(t, base.Add(2*time.Second).UTC().Format(time.RFC3339), b.eval(`document.querySelector('#dead-letters time').getAttribute('datetime')`))

	// The API reads the same records from the table.
	var api struct {
		Table   string                `json:"table"`
		Records []pipeline.DeadLetter `json:"records"`
	}
	require.Equal(t, http.StatusOK, f.api(t, http.MethodGet, "/management/v1/topics/flights/dead-letters?limit=2", "", &api))
	assert.Equal(t, "demo.flights_dlq", api.Table)
	require.Len(t, api.Records, 2, "limit bounds the answer")
	assert.Equal(t, want[0], fmt.Sprintf("%d/%d", api.Records[0].Partition, api.Records[0].Offset))
	assert.Equal(t, string(pipeline.KindBadHeader), api.Records[0].Kind)
	assert.True(t, base.Add(2*time.Second).Equal(api.Records[0].Timestamp), "record time %s", api.Records[0].Timestamp)
	b.a11y("topic with dead letters")
	b.shot("console-topic-dead-letters.png")
}
