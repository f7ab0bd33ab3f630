package topics

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/internal/errclass"
)

// evolveSpec makes fields the table's default partition spec: one catalog
// commit (through TableIO, which Tarn-owned tables accept) with
// add-spec + set-default-spec, asserting the default spec id it was
// planned on, built by iceberg-go's UpdateSpec. Fields the current spec
// has (same column and transform) are kept with their ids; others are
// removed or added. Existing data files keep their spec; no rewrite.
// Errors wrap ErrInvalid for a field that does not parse or apply.
func (m *Manager) evolveSpec(ctx context.Context, id catalog.Ident, fields []string) error {
	ident := append(table.Identifier{}, id.Namespace...)
	ident = append(ident, id.Name)
	tbl, err := m.deps.Catalog.TableIO(m.deps.Warehouse).LoadTable(ctx, ident)
	if err != nil {
		return err
	}
	sc := tbl.Schema()
	type key struct {
		source    int
		transform string
	}
	want := map[key]pipeline.PartitionField{}
	var order []key
	for _, s := range fields {
		f, err := pipeline.ParsePartitionField(s)
		if err != nil {
			return errclass.Errorf(ErrInvalid, "%v", err)
		}
		src, ok := sc.FindFieldByName(f.Source)
		if !ok {
			return errclass.Errorf(ErrInvalid, "partition field %q: the table has no column %s", s, f.Source)
		}
		if !f.Transform.CanTransform(src.Type) {
			return errclass.Errorf(ErrInvalid, "partition field %q: %s does not apply to %s column %s", s, f.Transform, src.Type, f.Source)
		}
		k := key{src.ID, f.Transform.String()}
		if _, dup := want[k]; !dup {
			order = append(order, k)
		}
		want[k] = f
	}
	tx := tbl.NewTransaction()
	us := tx.UpdateSpec(true)
	have := map[key]bool{}
	changed := false
	spec := tbl.Spec()
	for _, pf := range spec.Fields() {
		k := key{pf.SourceID(), pf.Transform.String()}
		if _, keep := want[k]; keep {
			have[k] = true
			continue
		}
		us.RemoveField(pf.Name)
		changed = true
	}
	for _, k := range order {
		if !have[k] {
			f := want[k]
			us.AddField(f.Source, f.Transform, f.Name())
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := us.Commit(); err != nil {
		return errclass.Errorf(ErrInvalid, "partition spec: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit the partition spec of %s: %w", id, err)
	}
	return nil
}
