package topics

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
)

// partField is one entry of TopicConfig.PartitionSpec.
//
// The syntax is ingest/pipeline's (Config.PartitionSpec), whose parser is
// unexported; this is a copy of its rules kept to the spec evolution
// here. pipeline.Config.Validate checks every entry first, so the two
// cannot disagree on what parses.
type partField struct {
	source    string
	transform iceberg.Transform
}

func parsePartField(s string) (partField, error) {
	s = strings.TrimSpace(s)
	open := strings.IndexByte(s, '(')
	if open < 0 {
		return partField{source: s, transform: iceberg.IdentityTransform{}}, nil
	}
	fn := strings.ToLower(strings.TrimSpace(s[:open]))
	args := strings.Split(strings.TrimSuffix(s[open+1:], ")"), ",")
	for i := range args {
		args[i] = strings.TrimSpace(args[i])
	}
	switch fn {
	case "years", "months", "days", "hours":
		fn = strings.TrimSuffix(fn, "s")
	}
	name := fn
	if fn == "bucket" || fn == "truncate" {
		if len(args) != 2 {
			return partField{}, fmt.Errorf("partition field %q: %s takes a width and a column", s, fn)
		}
		n, err := strconv.Atoi(args[0])
		if err != nil {
			return partField{}, fmt.Errorf("partition field %q: bad width", s)
		}
		name, args = fmt.Sprintf("%s[%d]", fn, n), args[1:]
	}
	if len(args) != 1 || args[0] == "" {
		return partField{}, fmt.Errorf("partition field %q: want transform(column)", s)
	}
	tr, err := iceberg.ParseTransform(name)
	if err != nil {
		return partField{}, fmt.Errorf("partition field %q: %v", s, err)
	}
	return partField{source: args[0], transform: tr}, nil
}

// fieldName names a partition field as ingest/pipeline does for new
// tables (Iceberg Java's names, dots of a nested path made underscores).
func (f partField) fieldName() string {
	base := strings.ReplaceAll(f.source, ".", "_")
	switch f.transform.(type) {
	case iceberg.IdentityTransform:
		return base
	case iceberg.BucketTransform:
		return base + "_bucket"
	case iceberg.TruncateTransform:
		return base + "_trunc"
	case iceberg.VoidTransform:
		return base + "_null"
	default:
		return base + "_" + f.transform.String()
	}
}

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
	want := map[key]partField{}
	var order []key
	for _, s := range fields {
		f, err := parsePartField(s)
		if err != nil {
			return errorf(ErrInvalid, "%v", err)
		}
		src, ok := sc.FindFieldByName(f.source)
		if !ok {
			return errorf(ErrInvalid, "partition field %q: the table has no column %s", s, f.source)
		}
		if !f.transform.CanTransform(src.Type) {
			return errorf(ErrInvalid, "partition field %q: %s does not apply to %s column %s", s, f.transform, src.Type, f.source)
		}
		k := key{src.ID, f.transform.String()}
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
			us.AddField(f.source, f.transform, f.fieldName())
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := us.Commit(); err != nil {
		return errorf(ErrInvalid, "partition spec: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit the partition spec of %s: %w", id, err)
	}
	return nil
}
