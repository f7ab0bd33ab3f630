package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/catalog"
)

// A keyed table's row key is recorded in its schema as the
// identifier-field-ids (Iceberg spec "Identifier Field IDs"), so engines
// and users see which columns identify a row: Flink and Spark's MERGE
// helpers read them, and Tableflow and Redpanda record them too. The key
// columns are Config.KeyFields, or, for a table keyed by the Kafka record
// key, the members of the decoded key when it is an object whose members
// are columns of the row (Debezium's key struct: the source table's
// primary key; an Avro or JSON key record). The spec allows only
// required primitive columns (not float or double), which Java's Schema
// enforces when a table is loaded, so no other column is ever named.

// keyColumns names the columns of rec's row key (sorted): Config.KeyFields,
// or the members of rec's decoded Kafka key when it is a JSON object
// with at least one member. nil when the key names no columns (a string
// or number key, no key, a key that cannot be decoded).
func (p *Pipeline) keyColumns(ctx context.Context, rec *kgo.Record) []string {
	if p.keyFields != nil {
		return p.keyFields.names
	}
	if !p.cfg.Mode.Keyed() || rec.Key == nil {
		return nil
	}
	identity, _, bad, err := p.keys.key(ctx, rec.Key)
	if bad != nil || err != nil {
		return nil
	}
	return objectMembers([]byte(identity))
}

// objectMembers returns the member names of the JSON object text b,
// sorted, or nil when b is no object or an empty one.
func objectMembers(b []byte) []string {
	d := jsontext.NewDecoder(bytes.NewReader(b))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	var names []string
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return nil
		}
		names = append(names, tok.String())
		if err := d.SkipValue(); err != nil {
			return nil
		}
	}
	slices.Sort(names)
	return names
}

// identifierType reports whether t may be an identifier field's type:
// a primitive other than float and double (Iceberg spec "Identifier
// Field IDs").
func identifierType(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.Float32Type, iceberg.Float64Type:
		return false
	case iceberg.PrimitiveType:
		return true
	}
	return false
}

// identifierPlan is how a schema update records the key columns names:
// add lists the columns to add as required (absent from the table,
// required in the writer); ok is false when some key column cannot be an
// identifier field (missing, optional in the table, or of another type),
// and the identifier-field-ids are then left as they are.
type identifierPlan struct {
	add map[string]bool
	ok  bool
}

// planIdentifier checks names against cur (the table's schema) and
// writer (nil for an update without a writer). A column cur lacks may be
// added as required only when the table has no rows (empty): a required
// column added to a table with rows would read null in them.
func planIdentifier(cur, writer *iceberg.Schema, names []string, empty bool) identifierPlan {
	if len(names) == 0 || len(cur.IdentifierFieldIDs) > 0 {
		return identifierPlan{}
	}
	plan := identifierPlan{add: map[string]bool{}, ok: true}
	for _, n := range names {
		if slices.Contains(callerColumns, n) {
			return identifierPlan{}
		}
		if f, ok := fieldNamed(cur.Fields(), n); ok {
			if !f.Required || !identifierType(f.Type) {
				return identifierPlan{}
			}
			continue
		}
		if writer == nil || !empty {
			return identifierPlan{}
		}
		w, ok := fieldNamed(writer.Fields(), n)
		if !ok || !w.Required || !identifierType(w.Type) {
			return identifierPlan{}
		}
		plan.add[n] = true
	}
	return plan
}

// paths is names as SetIdentifierField's name paths.
func paths(names []string) [][]string {
	out := make([][]string, len(names))
	for i, n := range names {
		out[i] = []string{n}
	}
	return out
}

// tableEmpty reports whether tbl's current snapshot holds no rows (or
// there is none).
func tableEmpty(tbl *table.Table) bool {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return true
	}
	if snap.Summary == nil {
		return false
	}
	n, ok := snap.Summary.Properties["total-records"]
	return ok && n == "0"
}

// ensureIdentifier records the key columns of a keyed table as its
// identifier-field-ids once, before rec (the first record of the
// pipeline, or of a table that lacked the columns) is taken: when the
// table's schema has none and every key column rec names (keyColumns)
// is a required primitive column of it, it commits the buffer, then a
// schema-only commit (set-current-schema of the same columns with the
// ids; no snapshot, the offsets stay), and reloads the head. A key
// column the table lacks is left to the evolution that adds it
// (evolve). reseeked is flush's.
func (p *Pipeline) ensureIdentifier(ctx context.Context, rec *kgo.Record) (reseeked bool, err error) {
	sc := p.sink.Table().Schema()
	if len(sc.IdentifierFieldIDs) > 0 {
		p.identified = true
		return false, nil
	}
	names := p.keyColumns(ctx, rec)
	if len(names) == 0 {
		// A key that names no columns (a string key): the next record
		// may (a Debezium truncate has no key); cheap to ask again.
		p.identified = rec.Key != nil
		return false, nil
	}
	for _, n := range names {
		if _, ok := fieldNamed(sc.Fields(), n); !ok {
			// Added by the evolution its record's schema brings.
			return false, nil
		}
	}
	p.identified = true
	if !planIdentifier(sc, nil, names, false).ok {
		p.log.Info("key columns are not recorded as identifier-field-ids: not all are required primitive columns", "columns", names)
		return false, nil
	}
	if reseeked, err := p.flush(ctx); err != nil || reseeked {
		p.identified = false
		return reseeked, err
	}
	for range maxEvolveAttempts {
		tbl, err := p.deps.Tables.LoadTable(ctx, p.ident)
		if err != nil {
			return false, fmt.Errorf("load table %s: %w", p.cfg.Table, err)
		}
		if len(tbl.Schema().IdentifierFieldIDs) > 0 {
			break
		}
		updates, reqs, err := table.NewUpdateSchema(tbl.NewTransaction(), true, false).SetIdentifierField(paths(names)).BuildUpdates()
		if err != nil {
			return false, fmt.Errorf("table %s: identifier-field-ids %v: %w", p.cfg.Table, names, err)
		}
		_, _, err = p.deps.Tables.CommitTable(ctx, p.ident, reqs, updates)
		if err == nil {
			p.log.Info("key columns recorded as the table's identifier-field-ids", "columns", names)
			break
		}
		if !errors.Is(err, catalog.ErrCommitFailed) && !errors.Is(err, table.ErrCommitFailed) {
			return false, fmt.Errorf("table %s: commit identifier-field-ids: %w", p.cfg.Table, err)
		}
	}
	if _, err := p.sink.Head(ctx); err != nil {
		return false, err
	}
	return false, p.useSchema(p.sink.Table().Schema())
}
