package topics

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"time"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/source"
)

// Restart backoff of a failed pipeline (Kafka, the registry or the catalog
// failed): 1 s doubling to 1 min, each wait jittered to 50–100 % so that
// topics failing together (a broker restart) do not retry in lockstep. A
// run that lasted longer than maxBackoff starts the doubling over.
const (
	minBackoff = time.Second
	maxBackoff = time.Minute
)

// lagRefresh is how often every topic's lag is read from Kafka for the
// metrics (Get and List read it fresh as well).
const lagRefresh = 5 * time.Second

// lagTimeout bounds one topic's lag listing.
const lagTimeout = 5 * time.Second

// topic is one topic's record and runtime. Fields are guarded by
// Manager.mu, except that only the op holder replaces cancel and done.
type topic struct {
	rec   record
	ident catalog.Ident

	// pl is the current (or last) pipeline; nil before the first start.
	pl *pipeline.Pipeline
	// base holds the counters of earlier pipelines (not their errors).
	base counters
	// errs counts bad records by kind, each once (errcount.go); errMarks
	// is the last offset counted per partition and kind.
	errs     map[string]int64
	errMarks map[errMarkKey]int64
	// suspended is the error the current pipeline suspended with, nil if
	// it did not.
	suspended *pipeline.SuspendedError
	// startErr is why the last pipeline could not be built; "" if it was.
	startErr string
	// starting: a supervisor was started and has not built its pipeline
	// yet, so pl is still the previous one (which may have suspended);
	// the topic is pending, not in pl's state.
	starting bool
	// head is the table's last known next offset per partition: loaded
	// at Start for a topic that runs no pipeline (disabled, or no Kafka),
	// and kept from the previous pipeline at a restart. Status and lag
	// use it until the current pipeline has loaded the table's head.
	head map[int32]int64
	// src is the open source of the running pipeline, nil between runs.
	src *trackedSource
	// gaps are those of sources already closed.
	gaps []source.Gap
	lag  lagInfo

	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor returns
}

// lagInfo is the last lag read from Kafka.
type lagInfo struct {
	// known: a lag was read; records and oldest mean nothing before.
	known   bool
	records int64
	// oldest is the timestamp of the oldest record not in the table; zero
	// when caught up or not known.
	oldest time.Time
}

// startLocked starts t's supervisor; m.op is held.
func (m *Manager) startLocked(t *topic) {
	ctx, cancel := context.WithCancel(m.ctx)
	done := make(chan struct{})
	m.mu.Lock()
	t.cancel, t.done = cancel, done
	t.starting = true
	name := t.rec.Config.Topic
	m.mu.Unlock()
	m.wg.Go(func() {
		defer close(done)
		// A pipeline's own panic fails its run (pipeline.Run) and is
		// restarted like any failure; one here ends only this topic's
		// supervision, never the process.
		m.panics.Run(m.log, "supervisor of topic "+name, func() { m.supervise(ctx, t) })
	})
}

// stopLocked stops t's supervisor and waits for it; its pipeline commits
// what it buffered first. It reports whether the supervisor was still
// running (not returned after a suspension); m.op is held.
func (m *Manager) stopLocked(t *topic) (running bool) {
	m.mu.RLock()
	cancel, done := t.cancel, t.done
	m.mu.RUnlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
	}
	cancel()
	<-done
	return true
}

// supervise runs t's pipeline until ctx ends or the topic suspends,
// restarting it with backoff after failures.
func (m *Manager) supervise(ctx context.Context, t *topic) {
	backoff := minBackoff
	for {
		pl, err := m.newPipeline(t)
		if err == nil {
			started := time.Now()
			err = pl.Run(ctx)
			// A suspension is recorded even when ctx ended meanwhile: the
			// pipeline shows StateSuspended before Run returns, so Resume
			// can see it, cancel ctx and wait for us; if we returned on
			// ctx.Err() first, t.suspended stayed nil, passSchema did not
			// move past the schema, and the resumed topic suspended again
			// on the same record (TestResumePastIncompatibleSchema, seen
			// under load in CI).
			var se *pipeline.SuspendedError
			if errors.As(err, &se) {
				m.mu.Lock()
				t.suspended = se
				m.mu.Unlock()
				return
			}
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				return
			}
			if time.Since(started) > maxBackoff {
				backoff = minBackoff
			}
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		backoff = min(2*backoff, maxBackoff)
		m.log.Warn("topic failed; restarting", "topic", t.rec.Config.Topic, "in", wait.String(), "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// newPipeline builds t's next pipeline from its record, carrying the
// counters of the previous one.
func (m *Manager) newPipeline(t *topic) (*pipeline.Pipeline, error) {
	m.mu.Lock()
	rec := t.rec
	m.mu.Unlock()
	_, pcfg, err := rec.Config.resolve()
	if err == nil {
		pcfg.Cluster = rec.Cluster
		pcfg.Format = pipeline.Format(rec.Config.Format)
		pcfg.BadSchemaIDs = rec.BadSchemaIDs
		var pl *pipeline.Pipeline
		pl, err = pipeline.New(pcfg, pipeline.Deps{
			Tables:     m.deps.Catalog.TableIO(m.deps.Warehouse),
			Registry:   m.reg,
			OpenSource: m.openSource(t),
			Logger:     m.log,
			Budget:     m.deps.Budget,
			Panics:     m.panics,
			OnBadRecord: func(r pipeline.RecordError) {
				m.countBad(t, r.Partition, r.Offset, string(r.Kind))
			},
			Owner: m.owner(pcfg),
		})
		if err == nil {
			m.mu.Lock()
			defer m.mu.Unlock()
			if t.pl != nil {
				if n := t.pl.Status().Next; n != nil {
					t.head = n
				}
				t.base.add(t.pl.Status())
			}
			t.pl, t.suspended, t.startErr, t.starting = pl, nil, "", false
			return pl, nil
		}
	}
	m.mu.Lock()
	t.startErr, t.starting = "cannot start the pipeline: "+err.Error(), false
	m.mu.Unlock()
	return nil, err
}

// openSource opens t's Kafka source for the pipeline: at the table's head
// offsets (head), and for partitions the head lacks at the offsets stored
// at enable; partitions found later begin at earliest (ingest/source).
func (m *Manager) openSource(t *topic) pipeline.OpenSourceFunc {
	return func(ctx context.Context, head map[int32]int64) (pipeline.Source, error) {
		m.mu.RLock()
		start := maps.Clone(t.rec.StartOffsets)
		topicName := t.rec.Config.Topic
		m.mu.RUnlock()
		if start == nil {
			start = map[int32]int64{}
		}
		maps.Copy(start, head)
		group, err := m.group(ctx, t)
		if err != nil {
			return nil, err
		}
		s, err := source.Open(ctx, source.Config{
			Brokers: m.deps.Brokers, Topic: topicName, ControlRecords: true, Opts: m.deps.Kafka, Logger: m.log,
			Panics: m.panics, Group: group,
		}, start)
		if err != nil {
			return nil, err
		}
		ts := &trackedSource{Source: s, m: m, t: t}
		m.mu.Lock()
		t.src = ts
		m.mu.Unlock()
		return ts, nil
	}
}

// trackedSource is a source whose gaps outlive it and which the manager
// asks for lag while it is open.
type trackedSource struct {
	*source.Source
	m *Manager
	t *topic
}

// Close closes the source and keeps its gaps.
func (s *trackedSource) Close() {
	s.Source.Close()
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.t.gaps = append(s.t.gaps, s.Gaps()...)
	if s.t.src == s {
		s.t.src = nil
	}
}

// refreshLag reads t's lag from Kafka: through the open source (which
// knows record ages) or, between runs, from the last stable offsets. A
// failure keeps the last known lag.
func (m *Manager) refreshLag(ctx context.Context, t *topic) {
	if m.adm == nil {
		return
	}
	m.mu.RLock()
	src, pl, topicName, head := t.src, t.pl, t.rec.Config.Topic, t.head
	start := maps.Clone(t.rec.StartOffsets)
	prev := t.lag
	m.mu.RUnlock()
	next := head
	if pl != nil {
		if n := pl.Status().Next; n != nil {
			next = n
		}
	}
	ctx, cancel := context.WithTimeout(ctx, lagTimeout)
	defer cancel()
	l := lagInfo{known: true}
	if src != nil {
		lag, err := src.Lag(ctx, next)
		if err != nil {
			m.log.Debug("topic lag", "topic", topicName, "err", err)
			return
		}
		for _, pl := range lag {
			l.records += pl.Records
			if pl.Records > 0 && !pl.Oldest.IsZero() && (l.oldest.IsZero() || pl.Oldest.Before(l.oldest)) {
				l.oldest = pl.Oldest
			}
		}
	} else {
		lso, err := m.adm.ListCommittedOffsets(ctx, topicName)
		if err == nil {
			err = lso.Error()
		}
		if err != nil {
			m.log.Debug("topic lag", "topic", topicName, "err", err)
			return
		}
		for p, lo := range lso[topicName] {
			n, ok := next[p]
			if !ok {
				n = start[p] // a partition added later: from 0, an upper bound
			}
			l.records += max(0, lo.Offset-n)
		}
		if l.records > 0 {
			// The oldest unconsumed record is still the one last seen.
			l.oldest = prev.oldest
		}
	}
	m.mu.Lock()
	t.lag = l
	m.mu.Unlock()
}

// refreshLagLoop refreshes every topic's lag every lagRefresh until Close.
func (m *Manager) refreshLagLoop() {
	tick := time.NewTicker(lagRefresh)
	defer tick.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
		}
		m.mu.RLock()
		ts := make([]*topic, 0, len(m.topics))
		for _, t := range m.topics {
			ts = append(ts, t)
		}
		m.mu.RUnlock()
		for _, t := range ts {
			m.panics.Run(m.log, "topic lag refresh", func() { m.refreshLag(m.ctx, t) })
		}
	}
}
