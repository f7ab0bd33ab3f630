// Package offsets is Tarn's exactly-once position in a table: the
// tarn.kafka.offsets snapshot summary property, which records for the
// table's topic the next offset to read of every partition it has
// materialized (DESIGN.md "Exactly once").
//
// ingest/sink writes it with every snapshot it commits and resumes from
// it; maintenance carries the head's value into the snapshots it commits
// (compaction, manifest rewrites), so the head alone always gives every
// partition's position. It sits below both, so that neither imports the
// other.
//
// Errors wrap [ErrInvalid].
package offsets

import (
	"encoding/json"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/internal/errclass"
	"github.com/tarnhq/tarn/internal/strictjson"
)

// Property is the snapshot summary property in which Tarn records,
// for the table's topic, the next offset to read of every partition it has
// materialized (DESIGN.md "Exactly once").
const Property = "tarn.kafka.offsets"

// Sentinels.
var (
	// ErrInvalid: a snapshot's tarn.kafka.offsets property cannot be
	// parsed or holds impossible values. Readers fail closed rather than
	// guess a position, which could lose or duplicate records.
	ErrInvalid = errclass.New(errclass.Internal, "invalid tarn.kafka.offsets property")
	// ErrLost: no snapshot on main's lineage carries offsets, but the
	// lineage is truncated (its oldest snapshots expired), so earlier
	// ones may have; starting over could duplicate records.
	ErrLost = fmt.Errorf("%w: lineage truncated before any snapshot with offsets", ErrInvalid)
)

// Offsets is the value of Property, as JSON
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

// Parse decodes a Property value. Unknown fields are refused
// rather than ignored: the next commit rewrites the whole value, so a field
// this version does not know would be silently dropped. So are data after
// the value, a field or partition named twice, and an offset beyond int64.
//
// Errors wrap ErrInvalid.
func Parse(s string) (Offsets, error) {
	// Strictly (strictjson): exactly one value, no member or partition
	// twice, so the offsets read are the only ones the text could mean.
	var o Offsets
	if err := strictjson.DecodeKnown([]byte(s), &o); err != nil {
		return Offsets{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if o.Topic == "" || o.Next == nil {
		return Offsets{}, fmt.Errorf("%w: topic and offsets are required", ErrInvalid)
	}
	for p, next := range o.Next {
		if p < 0 || next < 0 {
			return Offsets{}, fmt.Errorf("%w: partition %d at offset %d", ErrInvalid, p, next)
		}
	}
	return o, nil
}

// String returns the Property value: compact JSON with partitions
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
	return iceberg.Properties{Property: o.String()}
}

// Read returns the offsets of main's head: those of the newest
// snapshot on main's lineage that carries Property. Snapshots
// without it (an external writer's on a released table, a metadata-only
// operation) are passed over, since they consumed nothing from Kafka.
// found is false when main does not exist or no snapshot back to the
// table's first carries offsets.
//
// Errors: ErrInvalid for a malformed value; ErrLost when the
// walk reaches an expired snapshot before finding offsets.
func Read(md table.Metadata) (o Offsets, found bool, err error) {
	snap := md.SnapshotByName(table.MainBranch)
	for snap != nil {
		if v, ok := summaryProperty(snap, Property); ok {
			o, err := Parse(v)
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
			return Offsets{}, false, fmt.Errorf("snapshot %d: parent %d: %w", snap.SnapshotID, *snap.ParentSnapshotID, ErrLost)
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
