package topics

import (
	"context"
	"fmt"
	"maps"

	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/source"
	"github.com/tarnhq/tarn/offsets"
)

// groupPrefix starts the consumer group id of a shared topic; the rest is
// the table's UUID, so that two Tarn deployments on one Kafka cluster,
// or a table dropped and enabled again, never share a group.
const groupPrefix = "tarn-"

// owner is the pipeline's Deps.Owner: the replica's name when the topic
// is shared among replicas (Deps.Claims set, an append topic), else "".
// Upsert topics are not shared: their key index needs every partition
// of the table in one process.
func (m *Manager) owner(pcfg pipeline.Config) string {
	if m.deps.Claims == nil || pcfg.WithDefaults().Mode.Keyed() {
		return ""
	}
	return m.deps.Replica
}

// group returns the consumer group t's source joins, or nil when t is
// not shared. Its Claim reads the table's head offsets and claims the
// assigned partitions from there (catalog.PartitionClaims).
func (m *Manager) group(ctx context.Context, t *topic) (*source.Group, error) {
	m.mu.RLock()
	rec := t.rec
	m.mu.RUnlock()
	_, pcfg, err := rec.Config.resolve()
	if err != nil {
		return nil, err
	}
	if m.owner(pcfg) == "" {
		return nil, nil
	}
	io := m.deps.Catalog.TableIO(m.deps.Warehouse)
	ident := append(table.Identifier{}, pcfg.Table.Namespace...)
	ident = append(ident, pcfg.Table.Name)
	tbl, err := io.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", pcfg.Table, err)
	}
	uuid := tbl.Metadata().TableUUID().String()
	topicName := rec.Config.Topic
	return &source.Group{
		ID: groupPrefix + uuid,
		Claim: func(ctx context.Context, fallback map[int32]int64) (map[int32]source.Claim, error) {
			tbl, err := io.LoadTable(ctx, ident)
			if err != nil {
				return nil, fmt.Errorf("load table %s: %w", pcfg.Table, err)
			}
			if got := tbl.Metadata().TableUUID().String(); got != uuid {
				return nil, fmt.Errorf("table %s was replaced (uuid %s, was %s)", pcfg.Table, got, uuid)
			}
			head, _, err := offsets.Read(tbl.Metadata())
			if err != nil {
				return nil, fmt.Errorf("table %s: %w", pcfg.Table, err)
			}
			want := maps.Clone(fallback)
			for p := range want {
				if n, ok := head.Next[p]; ok {
					want[p] = n
				}
			}
			claims, err := m.deps.Claims.ClaimPartitions(ctx, uuid, topicName, m.deps.Replica, want)
			if err != nil {
				return nil, err
			}
			out := make(map[int32]source.Claim, len(claims))
			for p, c := range claims {
				out[p] = source.Claim{Epoch: c.Epoch, Next: c.Next}
			}
			return out, nil
		},
	}, nil
}
