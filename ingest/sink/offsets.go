package sink

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/internal/strictjson"
)

// OffsetsProperty is the snapshot summary property in which Tarn records,
// for the table's topic, the next offset to read of every partition it has
// materialized (DESIGN.md "Exactly once").
const OffsetsProperty = "tarn.kafka.offsets"

// Offsets is the value of OffsetsProperty, as JSON
// {"cluster": id, "topic": name, "topic-id": id, "offsets": {"0": 1234, ...}}
// ("topic-id" only when known).
//
// The map is cumulative: every snapshot Tarn writes carries all partitions
// ever committed, not only those the snapshot touched, so the head snapshot
// alone gives the position of every partition and expiring older
// snapshots loses nothing.
type Offsets struct {
	// Cluster is the Kafka cluster id.
	Cluster string `json:"cluster"`
	// Topic is the Kafka topic name.
	Topic string `json:"topic"`
	// TopicID is the Kafka topic id (base64, as Kafka's tools print it)
	// the offsets count in; "" when not known (a broker without topic
	// ids, or offsets written before Tarn recorded them). A topic deleted
	// and recreated under the same name gets a new id.
	TopicID string `json:"topic-id,omitempty"`
	// Next maps a partition to the next offset to read from it: one past
	// the last offset materialized or skipped. A partition that is absent
	// has never been committed; the pipeline starts it from its configured
	// start. Never nil in values this package returns.
	Next map[int32]int64 `json:"offsets"`
}

// ParseOffsets decodes an OffsetsProperty value. Unknown fields are refused
// rather than ignored: the next commit rewrites the whole value, so a field
// this version does not know would be silently dropped. So are data after
// the value, a field or partition named twice, and an offset beyond int64.
//
// Errors wrap ErrInvalidOffsets.
func ParseOffsets(s string) (Offsets, error) {
	// Strictly (strictjson): exactly one value, no member or partition
	// twice, so the offsets read are the only ones the text could mean.
	var o Offsets
	if err := strictjson.DecodeKnown([]byte(s), &o); err != nil {
		return Offsets{}, fmt.Errorf("%w: %v", ErrInvalidOffsets, err)
	}
	if o.Topic == "" || o.Next == nil {
		return Offsets{}, fmt.Errorf("%w: topic and offsets are required", ErrInvalidOffsets)
	}
	for p, next := range o.Next {
		if p < 0 || next < 0 {
			return Offsets{}, fmt.Errorf("%w: partition %d at offset %d", ErrInvalidOffsets, p, next)
		}
	}
	return o, nil
}

// String returns the OffsetsProperty value: compact JSON with partitions
// in lexical order (encoding/json sorts map keys as strings).
func (o Offsets) String() string {
	if o.Next == nil {
		o.Next = map[int32]int64{}
	}
	b, err := json.Marshal(o)
	if err != nil {
		// Strings and integer maps always marshal.
		panic(err)
	}
	return string(b)
}

// Properties returns snapshot summary properties carrying o. Maintenance
// jobs pass them to the snapshot they commit (compaction, rewrites) so the
// new head keeps every partition's position.
func (o Offsets) Properties() iceberg.Properties {
	return iceberg.Properties{OffsetsProperty: o.String()}
}

// advance returns a copy of o with each partition of ranges moved to its
// End: the cumulative merge of the head's map with a batch's.
func (o Offsets) advance(ranges map[int32]Range) Offsets {
	next := maps.Clone(o.Next)
	if next == nil {
		next = make(map[int32]int64, len(ranges))
	}
	for p, r := range ranges {
		next[p] = r.End
	}
	o.Next = next
	return o
}

// moved returns the lowest partition of ranges that o has at an offset
// other than the range's Start, and o's offset for it. A partition o lacks
// has never been committed, so any Start agrees with it.
func (o Offsets) moved(ranges map[int32]Range) (p int32, next int64, ok bool) {
	for _, p := range slices.Sorted(maps.Keys(ranges)) {
		if next, found := o.Next[p]; found && next != ranges[p].Start {
			return p, next, true
		}
	}
	return 0, 0, false
}

// ReadOffsets returns the offsets of main's head: those of the newest
// snapshot on main's lineage that carries OffsetsProperty. Snapshots
// without it (an external writer's on a released table, a metadata-only
// operation) are passed over, since they consumed nothing from Kafka.
// found is false when main does not exist or no snapshot back to the
// table's first carries offsets.
//
// Errors: ErrInvalidOffsets for a malformed value; ErrOffsetsLost when the
// walk reaches an expired snapshot before finding offsets.
func ReadOffsets(md table.Metadata) (o Offsets, found bool, err error) {
	snap := md.SnapshotByName(table.MainBranch)
	for snap != nil {
		if v, ok := summaryProperty(snap, OffsetsProperty); ok {
			o, err := ParseOffsets(v)
			if err != nil {
				return Offsets{}, false, fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
			}
			return o, true, nil
		}
		if snap.ParentSnapshotID == nil {
			return Offsets{}, false, nil
		}
		parent := md.SnapshotByID(*snap.ParentSnapshotID)
		if parent == nil {
			return Offsets{}, false, fmt.Errorf("snapshot %d: parent %d: %w", snap.SnapshotID, *snap.ParentSnapshotID, ErrOffsetsLost)
		}
		snap = parent
	}
	return Offsets{}, false, nil
}

func summaryProperty(snap *table.Snapshot, key string) (string, bool) {
	if snap.Summary == nil {
		return "", false
	}
	v, ok := snap.Summary.Properties[key]
	return v, ok
}
