package source

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// GapCause says why offsets were skipped.
type GapCause string

const (
	// GapRetention: the partition's log start moved past the source's
	// position before it read the records: retention (time or size) or
	// DeleteRecords removed them. Found at Open, from ListOffsets, and
	// while consuming, from the log start offset in fetch responses.
	GapRetention GapCause = "retention"
	// GapDataLoss: the broker lost records the source had read or was
	// about to read (an unclean leader election, a truncated log);
	// franz-go reports it as *kgo.ErrDataLoss and resets the partition.
	// The records now at the missing offsets, if any, are never returned:
	// the table already counts those offsets as read.
	GapDataLoss GapCause = "data-loss"
)

// Gap is a range of offsets of one partition that the source skipped:
// records existed there, or may have, and were never returned by Poll.
// The range is of offsets, not records: with read_committed some of the
// offsets may have held control records or aborted records, which would
// not have been returned anyway.
type Gap struct {
	Partition int32
	// FirstMissing and LastMissing are the first and last skipped
	// offsets, inclusive.
	FirstMissing int64
	LastMissing  int64
	Cause        GapCause
	// Detected is when the source noticed the gap.
	Detected time.Time
}

// Offsets returns the number of skipped offsets.
func (g Gap) Offsets() int64 { return g.LastMissing - g.FirstMissing + 1 }

// Gaps returns the gaps found since Open, oldest first. Every gap is also
// logged at error level when found.
func (s *Source) Gaps() []Gap {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.gaps)
}

// addGapLocked records and logs a gap; s.mu is held.
func (s *Source) addGapLocked(p int32, first, last int64, cause GapCause, why string) {
	if last < first {
		return
	}
	g := Gap{Partition: p, FirstMissing: first, LastMissing: last, Cause: cause, Detected: time.Now()}
	s.gaps = append(s.gaps, g)
	s.log.Error("kafka records skipped: they are not in the table",
		"topic", s.cfg.Topic, "partition", p,
		"first_missing_offset", first, "last_missing_offset", last,
		"offsets", g.Offsets(), "cause", string(cause), "why", why)
}

// logStartGapLocked checks one fetched partition for records deleted
// below the log start before the source read them; s.mu is held.
//
// A successful fetch is served from an offset at or above the log start
// (below it the broker answers OffsetOutOfRange). So when the response's
// log start is above ps.next (the offset after the last record fetched,
// control records included), kgo moved the partition forward (franz-go
// resumes at the log start after OffsetOutOfRange below it, silently: it
// reports no ErrDataLoss for that case, only a log line) or retention
// moved the log start while the offsets were being listed. Either way
// [ps.next, logStart) was never returned and no longer exists. If the
// response also carries a record below its log start (the log start moved
// after the read), that record ends the gap instead.
func (s *Source) logStartGapLocked(ps *partState, fp *kgo.FetchPartition) {
	if fp.Err != nil || fp.LogStartOffset <= ps.next {
		return
	}
	end := fp.LogStartOffset
	for _, r := range fp.Records {
		if r.Offset >= ps.next {
			end = min(end, r.Offset)
			break
		}
	}
	if end > ps.next {
		s.addGapLocked(ps.partition, ps.next, end-1, GapRetention,
			"the log start offset moved past the position before the records were read")
		ps.next = end
	}
}

// dataLossLocked handles a *kgo.ErrDataLoss for one partition; s.mu is
// held. franz-go has already moved its cursor to dl.ResetTo.
//
//   - ResetTo > ConsumedTo: [ConsumedTo, ResetTo) is skipped.
//   - ResetTo < ConsumedTo: franz-go rewinds and re-fetches; Poll drops
//     every record below ps.next, since the table counts those offsets as
//     read, so the records now at [ResetTo, ps.next) are never returned.
//   - equal: franz-go could not tell what was replaced; only logged.
func (s *Source) dataLossLocked(ps *partState, dl *kgo.ErrDataLoss) {
	s.log.Error("kafka broker lost data", "topic", s.cfg.Topic, "partition", dl.Partition, "err", dl.Error())
	switch {
	case dl.ResetTo > dl.ConsumedTo:
		first := max(dl.ConsumedTo, ps.next)
		s.addGapLocked(ps.partition, first, dl.ResetTo-1, GapDataLoss,
			"the broker lost records and the client skipped forward")
		ps.next = max(ps.next, dl.ResetTo)
	case dl.ResetTo < dl.ConsumedTo:
		s.addGapLocked(ps.partition, dl.ResetTo, ps.next-1, GapDataLoss,
			"the broker lost records the table holds; records now at those offsets are not read")
	}
}

// isDataLoss returns err as *kgo.ErrDataLoss.
func isDataLoss(err error) (*kgo.ErrDataLoss, bool) {
	var dl *kgo.ErrDataLoss
	ok := errors.As(err, &dl)
	return dl, ok
}
