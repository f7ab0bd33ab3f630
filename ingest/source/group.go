package source

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultGroupSessionTimeout is Group.SessionTimeout's default: how long
// the group coordinator waits for a replica's heartbeat before it hands
// the replica's partitions to the others. A replica killed without
// leaving (kill -9, a lost node) stalls its partitions that long. 10 s
// (Kafka's own default was 10 s until 3.0, then 45 s) keeps that stall
// near a topic's default freshness target (10 s) while tolerating the GC
// pauses and broker failovers a heartbeat every second rides out; the
// broker must allow it (group.min.session.timeout.ms, 6 s by default).
const DefaultGroupSessionTimeout = 10 * time.Second

// Group makes a Source share the topic's partitions with the other
// members of a Kafka consumer group (several Tarn replicas), instead of
// reading every partition (Config.Group).
//
// Partitions are assigned by the group coordinator with franz-go's
// cooperative-sticky balancer (KIP-429): a replica joining or leaving
// moves only the partitions that must move, and the others keep reading
// through the rebalance. The group's committed offsets are never written
// nor read: where an assigned partition starts is Claim's answer (the
// table's progress, claimed in the store), so the table stays the only
// record of progress.
type Group struct {
	// ID is the consumer group id. Every replica of one table must use the
	// same id and no other consumer may: Tarn derives it from the table's
	// UUID. Required.
	ID string
	// Claim claims assigned partitions for this replica and returns, per
	// partition of fallback, the claim's epoch and the next offset to
	// read. fallback holds every newly assigned partition with the offset
	// to start from when the table has none for it (Open's start, else the
	// log start). It is called from franz-go's group goroutine after each
	// assignment, before fetching begins; an error ends the group session
	// (the client rejoins, and the partitions are claimed again).
	// Required.
	Claim func(ctx context.Context, fallback map[int32]int64) (map[int32]Claim, error)
	// SessionTimeout is the group session timeout;
	// DefaultGroupSessionTimeout when 0.
	SessionTimeout time.Duration
}

// Claim is the claim of an assigned partition: the epoch the store gave
// it and the next offset to read.
type Claim struct {
	Epoch int64
	Next  int64
}

// Assignment is a change of the partitions a grouped Source reads, as
// TakeAssignments reports it: a partition claimed (Revoked false; read
// from Claim.Next on) or revoked (or lost: the replica fell out of the
// group), in the order they happened.
type Assignment struct {
	Partition int32
	Revoked   bool
	Claim     Claim
}

// groupOpts are the kgo options of a grouped source.
func (s *Source) groupOpts(g *Group) []kgo.Opt {
	timeout := g.SessionTimeout
	if timeout <= 0 {
		timeout = DefaultGroupSessionTimeout
	}
	return []kgo.Opt{
		kgo.ConsumerGroup(g.ID),
		kgo.ConsumeTopics(s.cfg.Topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		// Progress lives in the table; the group's offsets are not used.
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(timeout),
		kgo.HeartbeatInterval(min(time.Second, timeout/3)),
		// Kafka's group leader notices partitions added to the topic on
		// its metadata refresh; make that the source's refresh interval.
		kgo.MetadataMaxAge(max(s.cfg.PartitionRefresh, 10*time.Second)),
		kgo.AdjustFetchOffsetsFn(s.adjustAssigned),
		kgo.OnPartitionsRevoked(s.revoked),
		kgo.OnPartitionsLost(s.revoked),
	}
}

// adjustAssigned claims the partitions the group just assigned and
// starts each at its claim (kgo.AdjustFetchOffsetsFn).
func (s *Source) adjustAssigned(ctx context.Context, assigned map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	parts := slices.Sorted(maps.Keys(assigned[s.cfg.Topic]))
	if len(parts) == 0 {
		return assigned, nil
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	fallback := make(map[int32]int64, len(parts))
	var unknown bool
	for _, p := range parts {
		if off, ok := s.start[p]; ok {
			fallback[p] = off
		} else {
			unknown = true
		}
	}
	if unknown {
		b, err := s.listBounds(ctx)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			if _, ok := fallback[p]; !ok {
				fallback[p] = b[p].start
			}
		}
	}
	claims, err := s.group.Claim(ctx, fallback)
	if err != nil {
		s.log.Warn("kafka partitions assigned but not claimed; rejoining the group", "topic", s.cfg.Topic, "partitions", parts, "err", err)
		return nil, fmt.Errorf("claim partitions %v of %s: %w", parts, s.cfg.Topic, err)
	}
	out := make(map[int32]kgo.Offset, len(parts))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range parts {
		c, ok := claims[p]
		if !ok {
			return nil, fmt.Errorf("claim partitions of %s: no claim for partition %d", s.cfg.Topic, p)
		}
		// A new seq: records of an earlier assignment of p fetched
		// before this one are never returned after it (see take).
		s.seq++
		s.parts[p] = &partState{partition: p, next: c.Next, base: c.Next, reseekSeq: s.seq}
		s.assignments = append(s.assignments, Assignment{Partition: p, Claim: c})
		out[p] = kgo.NewOffset().At(c.Next).WithEpoch(-1)
	}
	s.log.Info("kafka partitions claimed", "topic", s.cfg.Topic, "group", s.group.ID, "claims", claims)
	assigned[s.cfg.Topic] = out
	return assigned, nil
}

// revoked forgets partitions the group took away (kgo.OnPartitionsRevoked
// and OnPartitionsLost). franz-go returns no record of them after the
// callback; the pipeline learns of it through TakeAssignments.
func (s *Source) revoked(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	parts := lost[s.cfg.Topic]
	if len(parts) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	slices.Sort(parts)
	for _, p := range parts {
		if s.parts[p] == nil {
			continue
		}
		delete(s.parts, p)
		s.seq++
		s.assignments = append(s.assignments, Assignment{Partition: p, Revoked: true})
	}
	s.log.Info("kafka partitions revoked", "topic", s.cfg.Topic, "group", s.group.ID, "partitions", parts)
}

// TakeAssignments returns the assignment changes since the last call, in
// order, and forgets them; nil without a Group. The pipeline calls it
// before taking the records of each Poll: every record Poll returns for a
// claimed partition was read under the latest claim reported (a claim is
// recorded before its partition is fetched).
func (s *Source) TakeAssignments() []Assignment {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.assignments
	s.assignments = nil
	return out
}
