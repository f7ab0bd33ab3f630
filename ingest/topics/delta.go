package topics

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
)

// setDelta turns the table's Delta output on or off: one commit of
// catalog.PropDeltaEnabled through TableIO (the property the Delta
// publisher follows; a REST client may set it on the owned table too,
// and then the table's property is what counts). Nothing is committed
// when the property already says so.
func (m *Manager) setDelta(ctx context.Context, id catalog.Ident, on bool) error {
	ident := append(table.Identifier{}, id.Namespace...)
	ident = append(ident, id.Name)
	tbl, err := m.deps.Catalog.TableIO(m.deps.Warehouse).LoadTable(ctx, ident)
	if err != nil {
		return err
	}
	want := strconv.FormatBool(on)
	if tbl.Properties()[catalog.PropDeltaEnabled] == want {
		return nil
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{catalog.PropDeltaEnabled: want}); err != nil {
		return err
	}
	if _, err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("set %s=%s on %s: %w", catalog.PropDeltaEnabled, want, id, err)
	}
	return nil
}
