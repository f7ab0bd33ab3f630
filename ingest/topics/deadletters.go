package topics

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/pipeline"
)

// DeadLetter is one record of a topic's dead letter table
// (pipeline.DeadLetter), as the management API returns it.
type DeadLetter = pipeline.DeadLetter

// DeadLetters returns the dead letter table of topic (error mode dlq)
// and its newest limit records, newest first, read by a scan of the table
// through TableIO like any reader's. The records are empty, not an
// error, while the table does not exist yet (it is created with the
// first bad record). Errors: ErrNoSuchTopic; ErrInvalid when the topic's
// error mode is not dlq or limit < 1; the catalog's and the scan's.
func (m *Manager) DeadLetters(ctx context.Context, topic string, limit int) (catalog.Ident, []DeadLetter, error) {
	if limit < 1 {
		return catalog.Ident{}, nil, fmt.Errorf("%w: limit %d: at least 1", ErrInvalid, limit)
	}
	st, err := m.Get(ctx, topic)
	if err != nil {
		return catalog.Ident{}, nil, err
	}
	if st.Config.ErrorMode != string(pipeline.ErrorModeDLQ) {
		return catalog.Ident{}, nil, fmt.Errorf("%w: topic %s has error mode %s, not dlq: it has no dead letter table", ErrInvalid, topic, st.Config.ErrorMode)
	}
	id, err := ParseTable(st.Table)
	if err != nil {
		return catalog.Ident{}, nil, err
	}
	dlq := pipeline.DLQTable(id)
	tbl, err := m.deps.Catalog.TableIO(m.deps.Warehouse).LoadTable(ctx, append(append(table.Identifier{}, dlq.Namespace...), dlq.Name))
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return dlq, []DeadLetter{}, nil
	}
	if err != nil {
		return dlq, nil, err
	}
	recs, err := pipeline.RecentDeadLetters(ctx, tbl, limit)
	if err != nil {
		return dlq, nil, err
	}
	if recs == nil {
		recs = []DeadLetter{}
	}
	return dlq, recs, nil
}
