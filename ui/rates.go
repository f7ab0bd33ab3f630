package ui

import (
	"sync"
	"time"

	"github.com/tarnhq/tarn/ingest/topics"
)

// rateWindow is how far back rows/s looks: long enough to smooth the
// steps of commits every few seconds, short enough to follow a change.
const rateWindow = time.Minute

// rates keeps, per topic, the samples (time, rows committed) of the
// last rateWindow: bounded by the number of topics times the window
// over Config.SampleInterval.
type rates struct {
	mu      sync.Mutex
	samples map[string][]rowSample
}

type rowSample struct {
	at   time.Time
	rows int64
}

func newRates() *rates { return &rates{samples: map[string][]rowSample{}} }

// sample records list's row counts at now and forgets topics no longer
// listed and samples older than rateWindow (one older sample is kept, so
// that the window is always spanned).
func (r *rates) sample(now time.Time, list []topics.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, st := range list {
		seen[st.Topic] = true
		s := append(r.samples[st.Topic], rowSample{now, st.Rows})
		for len(s) > 2 && now.Sub(s[1].at) >= rateWindow {
			s = s[1:]
		}
		r.samples[st.Topic] = s
	}
	for t := range r.samples {
		if !seen[t] {
			delete(r.samples, t)
		}
	}
}

// perSecond is topic's rows per second from its oldest sample to the
// status st read at now; false while less than a second is spanned, or
// when the counters went back (Tarn restarted: they count since start).
func (r *rates) perSecond(now time.Time, st topics.Status) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.samples[st.Topic]
	if len(s) == 0 {
		return 0, false
	}
	first := s[0]
	dt := now.Sub(first.at).Seconds()
	if dt < 1 || st.Rows < first.rows {
		return 0, false
	}
	return float64(st.Rows-first.rows) / dt, true
}
