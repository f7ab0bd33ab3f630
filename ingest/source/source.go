package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Source consumes every partition of one topic with read_committed
// isolation, from offsets its caller takes from the table. See the
// package doc for the offset rules and the lock order.
type Source struct {
	cfg Config
	log *slog.Logger
	cl  *kgo.Client
	adm *kadm.Client

	stopRefresh context.CancelFunc
	refreshDone chan struct{}
	closeOnce   sync.Once

	// mu guards everything below. Lock order: mu, then franz-go's
	// internal locks (SetOffsets, AddConsumePartitions); franz-go never
	// calls back into the Source while holding them (the logger takes
	// no lock of ours).
	mu sync.Mutex
	// parts are the assigned partitions.
	parts map[int32]*partState
	// pending are start offsets for partitions not assigned yet: from
	// Open's start for a partition the metadata did not list, or from
	// Reseek. The refresh assigns them there when it finds them.
	pending map[int32]int64
	// seq counts Reseek calls; partState.reseekSeq is its value at the
	// partition's last Reseek.
	seq  uint64
	gaps []Gap
	// fatal is an error found by a Poll that also returned records, or by
	// the partition refresh, for the next Poll to return.
	fatal  error
	closed bool
	// interrupt cancels the PollFetches of a running Poll; nil when no
	// Poll is in the client.
	interrupt context.CancelFunc
	// topicID is the topic's Kafka id as Open found it ("" when the
	// broker has no topic ids).
	topicID string
	// missing is when fetches of a partition began to fail because the
	// broker no longer knows the topic (it was deleted, maybe recreated);
	// warned is when that was last logged.
	missing map[int32]time.Time
	warned  map[string]time.Time

	// group is Config.Group (nil: every partition, direct assignment).
	group *Group
	// start is Open's start: where a partition the table lacks begins.
	start map[int32]int64
	// ready is closed once cl and adm are set: the group's callbacks,
	// which franz-go may run before Open returns, wait for it.
	ready chan struct{}
	// assignments are the group's changes TakeAssignments has not
	// returned yet.
	assignments []Assignment
}

// partState is the source's view of one assigned partition.
type partState struct {
	partition int32
	// next is the offset after the last record fetched, returned or a
	// control record, or the offset the partition started at or was
	// re-seeked to: the fetch position as far as the source can see.
	// Poll never returns a record below it. Offsets from next up are
	// unread, so a log start above next is a gap; a position that only
	// counted returned records would stand on the commit marker after a
	// partition's last transaction, and retention removing that marker
	// would read as a gap. (Aborted records are followed by their abort
	// marker, so they are passed too once it is fetched. kgo also steps
	// silently over offsets removed by compaction at a partition's end;
	// a log start moving past those reads as a gap.)
	next int64
	// base is where the partition started or was last re-seeked to.
	base      int64
	reseekSeq uint64
	// spans are the runs of records returned since base, for Lag's ages.
	spans []span
}

// Open connects and assigns every partition of the topic (direct
// assignment with kgo.ConsumePartitions: one Tarn replica owns the topic),
// or, with Config.Group, joins the consumer group that shares them among
// replicas (see Group); it fetches with read_committed isolation so that
// records of aborted transactions and control records never surface.
//
// start gives the next offset per partition, from the table's head
// (offsets.Offsets.Next). A partition missing from start begins at its
// earliest offset (the log start when Open lists it; the caller resolves
// a "latest" start at enable time and passes explicit offsets). A start
// below the log start is a gap (GapRetention, in Gaps and the log) and the
// partition begins at the log start. A partition in start that the
// topic's metadata does not list yet begins there once the periodic
// refresh finds it.
//
// Errors: ErrInvalidConfig, ErrInvalidStart, ErrUnknownTopic,
// ErrOffsetBeyondEnd (a start past the high watermark), or Kafka errors
// of the initial listing; the context bounds the listing only.
func Open(ctx context.Context, cfg Config, start map[int32]int64) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for _, p := range slices.Sorted(maps.Keys(start)) {
		if p < 0 || start[p] < 0 {
			return nil, fmt.Errorf("%w: partition %d at offset %d", ErrInvalidStart, p, start[p])
		}
	}
	cfg = cfg.withDefaults()
	s := &Source{
		cfg:         cfg,
		log:         cfg.Logger,
		refreshDone: make(chan struct{}),
		parts:       make(map[int32]*partState),
		pending:     make(map[int32]int64),
		missing:     make(map[int32]time.Time),
		warned:      make(map[string]time.Time),
		group:       cfg.Group,
		start:       maps.Clone(start),
		ready:       make(chan struct{}),
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.ClientID),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Where kgo lands after OffsetOutOfRange it cannot place exactly.
		// Below the log start it resumes at the log start whatever this
		// says; on the first fetch of a partition (retention passed the
		// start between listing and fetching) the log start is the only
		// choice that skips nothing that still exists. After broker data
		// loss it rewinds to the log start and Poll drops what the table
		// already has (see dataLossLocked).
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Control records (transaction markers) come to take, which
		// steps over them and drops them: the position must pass them,
		// or a marker removed by retention looks like a gap (see
		// partState.next).
		kgo.KeepControlRecords(),
		kgo.WithLogger(kgoLogger{cfg.Logger}),
		// Fetched records live in pooled slices that Record.Recycle
		// gives back (see recordPool and Poll).
		kgo.WithPools(records),
		// No KIP-227 fetch sessions: in franz-go v1.22.3 Client.Close
		// reads a source's fetch session while a fetch still in flight
		// writes it (fetchSession.bumpEpoch), a data race the race
		// detector caught closing a pipeline (TestRecreatedTopic). A
		// source reads one topic's few partitions, where sessions save
		// little.
		kgo.DisableFetchSessions(),
	}, cfg.Opts...)
	if cfg.Group != nil {
		opts = append(opts, s.groupOpts(cfg.Group)...)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	s.cl, s.adm = cl, kadm.NewClient(cl)
	close(s.ready)
	b, err := s.listBounds(ctx)
	if err != nil {
		cl.Close()
		return nil, err
	}
	if s.topicID, err = s.describeTopicID(ctx); err != nil {
		cl.Close()
		return nil, err
	}
	if s.group != nil {
		// The group assigns partitions, also those added later.
		close(s.refreshDone)
		s.stopRefresh = func() {}
		return s, nil
	}
	s.mu.Lock()
	err = s.assignLocked(b, start)
	for p, off := range start {
		if _, ok := b[p]; !ok {
			s.pending[p] = off
			s.log.Warn("kafka partition in the start offsets is not in the topic's metadata yet; it starts there when found",
				"topic", cfg.Topic, "partition", p, "offset", off)
		}
	}
	s.mu.Unlock()
	if err != nil {
		cl.Close()
		return nil, err
	}
	refreshCtx, cancel := context.WithCancel(context.Background())
	s.stopRefresh = cancel
	go s.refreshLoop(refreshCtx)
	return s, nil
}

// Poll returns the next fetched records, in offset order per partition
// (partitions interleave arbitrarily), blocking until some arrive or ctx
// ends (then it returns ctx.Err()). It returns at least one record or an
// error, never both: records fetched together with an error come first,
// the error on the next call.
//
// Offsets are not contiguous: with read_committed, control records and
// aborted records leave holes that Poll never fills. The next offset of a
// partition, the one to commit to the table (sink Range.End), is the
// offset of the last record returned for it plus 1, never a count of
// records. Control records are returned only with Config.ControlRecords;
// they count for the next offset like any other record.
//
// Fetch errors the client retries (leadership moves, a broker restart)
// are retried internally and logged. Data loss reported by the client
// (*kgo.ErrDataLoss) becomes a gap. Other errors are fatal: wrapped in
// ErrFetch with the topic and partition (and matchable with errors.Is
// against the kerr error). ErrOffsetBeyondEnd when the refresh finds a
// partition whose pending Reseek offset is past its end. ErrClosed once
// the Source is closed.
//
// Poll must not be called concurrently with itself; it may be called
// concurrently with Reseek, Lag, Gaps and Close.
//
// The records live in slices franz-go takes from a pool (kgo.WithPools).
// A caller done with a record (nothing refers to the *kgo.Record any
// more; its Key, Value and Headers are not pooled) may call its Recycle,
// and the slice is reused once all records of its batch were recycled. A
// record not recycled costs nothing but the reuse: the garbage collector
// takes its slice. Using a record after its Recycle reads zeroes.
func (s *Source) Poll(ctx context.Context) ([]*kgo.Record, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		if err := s.fatal; err != nil {
			s.fatal = nil
			s.mu.Unlock()
			return nil, err
		}
		seq := s.seq
		// The refresh interrupts a blocked PollFetches when it finds a
		// fatal error (the loop then returns it).
		pollCtx, interrupt := context.WithCancel(ctx)
		s.interrupt = interrupt
		s.mu.Unlock()

		fetches := s.cl.PollFetches(pollCtx)
		s.mu.Lock()
		s.interrupt = nil
		s.mu.Unlock()
		interrupt()
		recs, err := s.take(fetches, seq)
		switch {
		case len(recs) > 0:
			if err != nil {
				s.mu.Lock()
				s.fatal = err
				s.mu.Unlock()
			}
			return recs, nil
		case err != nil:
			return nil, err
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
	}
}

// take filters one PollFetches result into the records to return, and
// handles its errors.
//
// Every record franz-go hands over has moved its cursor, so a record
// dropped here is either below partState.next (already returned, or
// before a Reseek target: dropping it is the point) or re-fetched by a
// SetOffsets issued here. The second case is a Reseek that raced with
// PollFetches:
//
//	Poll:   seq = 5; PollFetches drains buffered records 20..29 of p
//	Reseek: seq = 6, p.reseekSeq = 6, p.next = 10; SetOffsets(p: 10)
//	        (discards what is still buffered, fetches from 10)
//	Poll:   take sees p.reseekSeq 6 > 5: drops 20..29 and re-issues
//	        SetOffsets(p: p.next); the next Poll returns 10..
//
// Without the check, 20..29 would be returned after the Reseek. The
// re-issued SetOffsets makes the drop safe also when the drained records
// were already the re-seeked ones (10.., fetched after the Reseek but
// before take): they are fetched again.
func (s *Source) take(fetches kgo.Fetches, seq uint64) ([]*kgo.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		out    = make([]*kgo.Record, 0, fetches.NumRecords())
		fatal  error
		reseek map[int32]kgo.EpochOffset
	)
	for i := range fetches {
		for j := range fetches[i].Topics {
			ft := &fetches[i].Topics[j]
			for k := range ft.Partitions {
				fp := &ft.Partitions[k]
				ps := s.parts[fp.Partition]
				if ft.Topic != s.cfg.Topic || ps == nil {
					// Injected errors (closed client, context) have
					// no topic and partition -1.
					if err := s.fetchErrLocked(ft.Topic, fp.Partition, fp.Err); err != nil && fatal == nil {
						fatal = err
					}
					continue
				}
				if ps.reseekSeq > seq {
					if len(fp.Records) > 0 {
						if reseek == nil {
							reseek = make(map[int32]kgo.EpochOffset)
						}
						reseek[ps.partition] = kgo.EpochOffset{Epoch: -1, Offset: ps.next}
					}
					if fp.Err != nil {
						s.log.Warn("kafka fetch error for a partition re-seeked meanwhile; ignored",
							"topic", s.cfg.Topic, "partition", ps.partition, "err", fp.Err)
					}
					continue
				}
				if dl, ok := isDataLoss(fp.Err); ok {
					s.dataLossLocked(ps, dl)
				} else if err := s.fetchErrLocked(ft.Topic, fp.Partition, fp.Err); err != nil && fatal == nil {
					fatal = err
				}
				s.logStartGapLocked(ps, fp)
				out = ps.appendLocked(out, fp.Records, s.cfg.ControlRecords)
			}
		}
	}
	if len(reseek) > 0 {
		s.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{s.cfg.Topic: reseek})
	}
	return out, fatal
}

// appendLocked appends the records at or above ps.next to out, control
// records only if control, and moves ps.next past all of them.
func (ps *partState) appendLocked(out []*kgo.Record, recs []*kgo.Record, control bool) []*kgo.Record {
	var first, last *kgo.Record
	for _, r := range recs {
		if r.Offset < ps.next {
			continue
		}
		ps.next = r.Offset + 1
		if r.Attrs.IsControl() {
			if control {
				out = append(out, r)
			}
			continue
		}
		if first == nil {
			first = r
		}
		last = r
		out = append(out, r)
	}
	if first != nil {
		ps.addSpanLocked(first.Offset, last.Offset, first.Timestamp)
	}
	return out
}

// fetchErrLocked classifies a fetch error (other than data loss):
// nil for none, for the caller's context ending, and for errors franz-go
// retries by itself (logged); ErrClosed; else a fatal error.
func (s *Source) fetchErrLocked(topic string, p int32, err error) error {
	switch {
	case err == nil:
		delete(s.missing, p)
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return nil
	case errors.Is(err, kgo.ErrClientClosed):
		return ErrClosed
	case errors.Is(err, kerr.UnknownTopicID), errors.Is(err, kerr.UnknownTopicOrPartition):
		// The topic was deleted (and maybe recreated under a new id). The
		// client retries these at once, forever: bound it, so that the
		// pipeline fails with a reason and restarts with backoff, and a
		// recreated topic is caught by its new id (TopicID).
		since, ok := s.missing[p]
		if !ok {
			since = time.Now()
			s.missing[p] = since
		}
		if time.Since(since) >= s.cfg.MissingTopicTimeout {
			s.log.Error("kafka topic gone", "topic", topic, "partition", p, "since", since, "err", err)
			return fmt.Errorf("%w: %s partition %d: the broker has not known the topic for %v (deleted or recreated?): %w",
				ErrUnknownTopic, topic, p, time.Since(since).Round(time.Second), err)
		}
		s.warnLocked("kafka fetch error; retrying", topic, p, err)
		return nil
	case kerr.IsRetriable(err):
		s.warnLocked("kafka fetch error; retrying", topic, p, err)
		return nil
	}
	if dl, ok := isDataLoss(err); ok {
		// Data loss on a partition the source does not have: nothing to
		// account for, but never hidden.
		s.log.Error("kafka broker lost data", "topic", topic, "partition", p, "err", dl.Error())
		return nil
	}
	s.log.Error("kafka fetch failed", "topic", topic, "partition", p, "err", err)
	return fmt.Errorf("%w: topic %s partition %d: %w", ErrFetch, topic, p, err)
}

// warnLocked logs a retried fetch error at most once per fetchWarnEvery
// for each partition and error: the client may retry many times a second.
func (s *Source) warnLocked(msg, topic string, p int32, err error) {
	key := strconv.Itoa(int(p)) + "\x00" + err.Error()
	if last, ok := s.warned[key]; ok && time.Since(last) < fetchWarnEvery {
		return
	}
	s.warned[key] = time.Now()
	s.log.Warn(msg, "topic", topic, "partition", p, "err", err)
}

// TopicID returns the topic's Kafka topic id (base64 of its 16 bytes, as
// Kafka's tools print it) as Open found it, or "" when the broker does not
// assign ids. A topic deleted and recreated under the same name has a new
// id: the pipeline compares it with the id recorded in the table.
func (s *Source) TopicID() string { return s.topicID }

// describeTopicID reads the topic's id from the cluster metadata.
func (s *Source) describeTopicID(ctx context.Context) (string, error) {
	md, err := s.adm.Metadata(ctx, s.cfg.Topic)
	if err != nil {
		return "", fmt.Errorf("metadata of %s: %w", s.cfg.Topic, err)
	}
	td, ok := md.Topics[s.cfg.Topic]
	switch {
	case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
		return "", fmt.Errorf("%w: %s", ErrUnknownTopic, s.cfg.Topic)
	case td.Err != nil:
		return "", fmt.Errorf("metadata of %s: %w", s.cfg.Topic, td.Err)
	case td.ID == kadm.TopicID{}:
		return "", nil
	}
	return td.ID.String(), nil
}

// Reseek moves every listed partition to the given next offset (after the
// sink reports a stale batch: the table's head offsets). Records fetched
// for those partitions before the Reseek are never returned afterwards,
// even by a Poll running concurrently; other partitions are untouched.
// A partition the source has not assigned yet starts at the offset when
// the refresh finds it. Negative partitions or offsets are ignored
// (logged).
//
// An offset below the log start becomes a gap (GapRetention) when the
// fetch finds it; an offset past the high watermark makes franz-go
// report data loss.
func (s *Source) Reseek(offsets map[int32]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.seq++
	set := make(map[int32]kgo.EpochOffset, len(offsets))
	for p, off := range offsets {
		if p < 0 || off < 0 {
			s.log.Error("kafka reseek to a negative partition or offset ignored", "topic", s.cfg.Topic, "partition", p, "offset", off)
			continue
		}
		ps := s.parts[p]
		if ps == nil && s.group != nil {
			// Not this replica's: its claim decides where it starts.
			continue
		}
		if ps == nil {
			s.pending[p] = off
			continue
		}
		ps.next, ps.base, ps.reseekSeq, ps.spans = off, off, s.seq, nil
		set[p] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
	if len(set) > 0 {
		s.log.Info("kafka partitions re-seeked", "topic", s.cfg.Topic, "offsets", set)
		s.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{s.cfg.Topic: set})
	}
}

// BufferedRecords is the number of records fetched and held by the Kafka
// client that Poll has not returned yet (the memory a pipeline's budget
// must count besides its own batch), transaction markers included.
func (s *Source) BufferedRecords() int64 { return s.cl.BufferedFetchRecords() }

// Close stops fetching and the partition refresh and closes the client. A
// Poll blocked meanwhile returns ErrClosed. Safe to call more than once.
func (s *Source) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.stopRefresh()
		<-s.refreshDone
		s.cl.Close()
	})
}
