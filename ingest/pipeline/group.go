package pipeline

import (
	"context"
	"fmt"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/ingest/source"
)

// Assigner is the capability of a Source that shares the topic's
// partitions with other replicas through a consumer group (ingest/source
// with Config.Group). The pipeline of a shared topic (Deps.Owner set)
// requires it.
type Assigner interface {
	// TakeAssignments returns, in order, the partitions claimed (with
	// the claim's epoch and next offset) and revoked since the last call.
	// Every record a later Poll returns for a claimed partition was read
	// under the latest claim reported.
	TakeAssignments() []source.Assignment
}

var _ Assigner = (*source.Source)(nil)

// group is the state of a pipeline whose topic is shared (Deps.Owner).
type group struct {
	src   Assigner
	owner string
	// table is the table's UUID, which names its claims.
	table string
	// epochs are the partitions this replica holds, with their claim's
	// epoch; a record of another partition is dropped.
	epochs map[int32]int64
}

// assign takes in the source's assignment changes before the records of
// a poll are processed. A change to a partition the buffer holds records
// of flushes the buffer first, under the claims they were read under: a
// revoked partition is usually still claimed by this replica (the next
// owner claims it only after the revocation), so the batch commits, and
// if the next owner was faster the fence refuses it and the records are
// read again by the next owner. reseeked reports that the flush dropped
// the batch (the caller drops the poll's records).
func (p *Pipeline) assign(ctx context.Context) (reseeked bool, err error) {
	g := p.group
	changes := g.src.TakeAssignments()
	if len(changes) == 0 {
		return false, nil
	}
	for _, a := range changes {
		if p.planned[a.Partition] != p.next[a.Partition] && !p.buf.empty() {
			if reseeked, err = p.flush(ctx); err != nil {
				return reseeked, err
			}
			break
		}
	}
	for _, a := range changes {
		if a.Revoked {
			delete(g.epochs, a.Partition)
			p.next[a.Partition] = p.planned[a.Partition]
			continue
		}
		g.epochs[a.Partition] = a.Claim.Epoch
		p.planned[a.Partition], p.next[a.Partition] = a.Claim.Next, a.Claim.Next
	}
	p.log.Info("partitions claimed", "changes", changes, "holding", len(g.epochs))
	return reseeked, nil
}

// holds reports whether this replica reads partition part: always for an
// unshared topic.
func (p *Pipeline) holds(part int32) bool {
	if p.group == nil {
		return true
	}
	_, ok := p.group.epochs[part]
	return ok
}

// fenced returns ctx carrying the fence of batch: the claims its records
// were read under (catalog.WithFence); ctx itself for an unshared topic.
func (p *Pipeline) fenced(ctx context.Context, batch sink.Batch) context.Context {
	g := p.group
	if g == nil {
		return ctx
	}
	f := catalog.Fence{Table: g.table, Owner: g.owner, Partitions: make(map[int32]catalog.FencedRange, len(batch.Ranges))}
	for part, r := range batch.Ranges {
		// A partition without a claim has epoch 0, which no claim has:
		// the store refuses the batch.
		f.Partitions[part] = catalog.FencedRange{Epoch: g.epochs[part], Start: r.Start, End: r.End}
	}
	return catalog.WithFence(ctx, f)
}

// refenced handles a batch the store refused (catalog.ErrFenced): the
// partitions still held are read again from where the batch started; the
// others are another replica's now.
func (p *Pipeline) refenced(dropped map[int32]sink.Range) {
	to := make(map[int32]int64, len(dropped))
	for part, r := range dropped {
		p.next[part] = r.Start
		if p.holds(part) {
			to[part] = r.Start
		}
	}
	p.src.Reseek(to)
	p.update(func(st *Status) { st.StaleBatches++ })
}

// newGroup checks that a shared topic's source can share.
func newGroup(src Source, owner, table string) (*group, error) {
	a, ok := src.(Assigner)
	if !ok {
		return nil, fmt.Errorf("%w: the topic is shared (Deps.Owner) but its source has no consumer group", ErrInvalidConfig)
	}
	return &group{src: a, owner: owner, table: table, epochs: map[int32]int64{}}, nil
}
