package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/internal/recovery"
)

// bounds is a partition's log start offset and high watermark.
type bounds struct{ start, end int64 }

// listBounds lists the log start and high watermark of every partition of
// the topic. Errors wrap ErrUnknownTopic when the topic does not exist.
func (s *Source) listBounds(ctx context.Context) (map[int32]bounds, error) {
	starts, err := s.adm.ListStartOffsets(ctx, s.cfg.Topic)
	if err != nil {
		return nil, fmt.Errorf("list start offsets of %s: %w", s.cfg.Topic, err)
	}
	ends, err := s.adm.ListEndOffsets(ctx, s.cfg.Topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %s: %w", s.cfg.Topic, err)
	}
	out := make(map[int32]bounds)
	for _, listed := range []kadm.ListedOffsets{starts, ends} {
		if err := listedErr(s.cfg.Topic, listed); err != nil {
			return nil, err
		}
	}
	for p, lo := range starts[s.cfg.Topic] {
		hi, ok := ends[s.cfg.Topic][p]
		if !ok {
			return nil, fmt.Errorf("list offsets of %s: partition %d has a start offset but no end offset", s.cfg.Topic, p)
		}
		out[p] = bounds{start: lo.Offset, end: hi.Offset}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s has no partitions", ErrUnknownTopic, s.cfg.Topic)
	}
	return out, nil
}

// listedErr returns the first per-partition error of a kadm listing.
func listedErr(topic string, listed kadm.ListedOffsets) error {
	ps := listed[topic]
	for _, p := range slices.Sorted(maps.Keys(ps)) {
		if err := ps[p].Err; err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) && p < 0 {
				return fmt.Errorf("%w: %s: %w", ErrUnknownTopic, topic, err)
			}
			return fmt.Errorf("list offsets of %s partition %d: %w", topic, p, err)
		}
	}
	if len(ps) == 0 {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
	}
	return nil
}

// assignLocked starts consuming the partitions of b that the source does
// not have yet; s.mu is held. A partition starts at want[p] if given
// (Open's start map, or a Reseek that came before the partition was
// found), else at its log start. A wanted offset below the log start is a
// gap: the partition starts at the log start instead. A wanted offset
// past the high watermark fails with ErrOffsetBeyondEnd, and nothing is
// assigned.
func (s *Source) assignLocked(b map[int32]bounds, want map[int32]int64) error {
	assign := make(map[int32]kgo.Offset)
	type gap struct {
		p           int32
		first, last int64
	}
	var gaps []gap
	for _, p := range slices.Sorted(maps.Keys(b)) {
		if s.parts[p] != nil {
			continue
		}
		bd := b[p]
		at := bd.start
		if off, ok := want[p]; ok {
			if off > bd.end {
				return fmt.Errorf("%w: %s partition %d: offset %d, high watermark %d, log start %d (topic recreated or data lost?)",
					ErrOffsetBeyondEnd, s.cfg.Topic, p, off, bd.end, bd.start)
			}
			if off < bd.start {
				gaps = append(gaps, gap{p, off, bd.start - 1})
			} else {
				at = off
			}
		}
		assign[p] = kgo.NewOffset().At(at)
	}
	if len(assign) == 0 {
		return nil
	}
	for p, o := range assign {
		at := o.EpochOffset().Offset
		s.parts[p] = &partState{partition: p, next: at, base: at}
		delete(s.pending, p)
	}
	for _, g := range gaps {
		s.addGapLocked(g.p, g.first, g.last, GapRetention, "the start offset is below the log start offset")
	}
	s.log.Info("kafka partitions assigned", "topic", s.cfg.Topic, "offsets", fmtOffsets(assign))
	s.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.Topic: assign})
	return nil
}

func fmtOffsets(m map[int32]kgo.Offset) map[string]int64 {
	out := make(map[string]int64, len(m))
	for p, o := range m {
		out[fmt.Sprint(p)] = o.EpochOffset().Offset
	}
	return out
}

// refreshLoop discovers partitions added to the topic every
// PartitionRefresh until ctx ends; it closes s.refreshDone when done.
func (s *Source) refreshLoop(ctx context.Context) {
	defer close(s.refreshDone)
	t := time.NewTicker(s.cfg.PartitionRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.cfg.Panics.Call(recovery.Background, func() error { return s.refresh(ctx) }); err != nil && ctx.Err() == nil {
			s.log.Warn("kafka partition refresh failed; retrying at the next refresh",
				"topic", s.cfg.Topic, "err", err)
		}
	}
}

// refresh assigns partitions the topic has gained since the last look.
// The listing runs without s.mu; a Reseek of a new partition that lands
// meanwhile is still honoured, as assignLocked reads s.pending under the
// lock.
func (s *Source) refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, max(s.cfg.PartitionRefresh, 10*time.Second))
	defer cancel()
	b, err := s.listBounds(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	err = s.assignLocked(b, s.pending)
	if errors.Is(err, ErrOffsetBeyondEnd) && s.fatal == nil {
		// A Reseek target past the end: as at Open, fail closed.
		s.fatal = err
		if s.interrupt != nil {
			s.interrupt()
		}
	}
	return err
}
