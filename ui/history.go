package ui

import (
	"sync"
	"time"

	"github.com/tarnhq/tarn/ingest/topics"
)

// History (issue 19 item 5): the console keeps, per enabled topic, a
// sample of its status every Config.SampleInterval for the last
// historyWindow, in memory: at the default 5 s, 720 samples of 56 bytes
// a topic (about 40 KiB), dropped when Tarn stops or the topic is no
// longer listed. Prometheus (/metrics) keeps the long history.
const historyWindow = time.Hour

// rateWindow is how far back rows/s looks: long enough to smooth the
// steps of commits every few seconds, short enough to follow a change.
const rateWindow = time.Minute

// history holds the samples of every topic, oldest first.
type history struct {
	mu      sync.Mutex
	samples map[string][]statusSample
}

// statusSample is what a topic's charts and rows/s read of one status.
type statusSample struct {
	at         time.Time
	rows       int64
	lagRecords int64   // -1: not known
	lagSeconds float64 // -1: not known
	commitSecs float64 // the latest commit's duration; -1: none yet
}

func newHistory() *history { return &history{samples: map[string][]statusSample{}} }

// sample records list's statuses at now and forgets topics no longer
// listed and samples older than historyWindow (one older sample is kept,
// so that the window is always spanned).
func (h *history) sample(now time.Time, list []topics.Status) {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	for _, st := range list {
		seen[st.Topic] = true
		s := statusSample{at: now, rows: st.Rows, lagRecords: -1, lagSeconds: -1, commitSecs: -1}
		if st.LagRecords != nil {
			s.lagRecords = *st.LagRecords
		}
		if st.LagSeconds != nil {
			s.lagSeconds = *st.LagSeconds
		}
		if st.LastCommitSeconds != nil {
			s.commitSecs = *st.LastCommitSeconds
		}
		ss := append(h.samples[st.Topic], s)
		drop := 0
		for len(ss)-drop > 2 && now.Sub(ss[drop+1].at) >= historyWindow {
			drop++
		}
		if drop > 0 {
			// Copy down rather than reslice, so the array does not keep
			// growing at its end.
			ss = append(ss[:0], ss[drop:]...)
		}
		h.samples[st.Topic] = ss
	}
	for t := range h.samples {
		if !seen[t] {
			delete(h.samples, t)
		}
	}
}

// of returns a copy of topic's samples, oldest first.
func (h *history) of(topic string) []statusSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]statusSample(nil), h.samples[topic]...)
}

// perSecond is topic's rows per second over the last rateWindow: from
// its oldest sample in that window to the status st read at now; false
// while less than a second is spanned, or when the counters went back
// (Tarn restarted: they count since start).
func (h *history) perSecond(now time.Time, st topics.Status) (float64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.samples[st.Topic]
	if len(s) == 0 {
		return 0, false
	}
	// The newest sample older than the window, so that it is spanned
	// whole (the oldest when none is older yet).
	i := len(s)
	for i > 0 && now.Sub(s[i-1].at) < rateWindow {
		i--
	}
	first := s[max(i-1, 0)]
	dt := now.Sub(first.at).Seconds()
	if dt < 1 || st.Rows < first.rows {
		return 0, false
	}
	return float64(st.Rows-first.rows) / dt, true
}
