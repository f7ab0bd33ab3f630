package catalog

// Spec rules on table and view metadata that iceberg-go v0.7.0's
// MetadataBuilder (table and view) does not enforce, checked on every
// commit, create and view replace before anything is written. A change
// that breaks one would leave metadata that some client cannot load (pyiceberg
// refuses truncate[-5], blob-metadata null, an identifier field that is not
// required, an unknown snapshot operation; iceberg-go refuses a negative
// sequence number) or a table no engine can write (a day transform on a
// string column, an invalid schema.name-mapping.default).
//
// Each rule is checked on the metadata the commit would produce, not on
// the updates one by one, so it holds whatever order or combination of
// updates produced it; and only problems the commit introduces are refused
// (problems(next) minus problems(base)), so a table registered with
// metadata another catalog let through can still be changed.
//
// Rules that belong in iceberg-go itself (noted for upstream): transform vs
// source type in AddPartitionSpec (BindToSchema skips CanTransform);
// unknown transforms in new specs and sort orders; statistics and partition
// statistics files (snapshot, sizes, path, blob metadata); ref names and
// main being a branch; identifier fields; snapshot summaries, schema ids and
// sequence numbers; view version default-namespace and summary.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/tarnhq/tarn/storage"
)

// checkTableUpdates refuses a set-statistics update whose top-level
// snapshot-id (deprecated, REST spec SetStatisticsUpdate) names another
// snapshot than its statistics file: iceberg-go silently keeps the file's,
// so the state check cannot see the contradiction. (Non-positive
// set-snapshot-ref retention values are dropped by iceberg-go too, but
// DuckDB sends -1 for "not set", so they stay accepted.) Errors:
// ErrInvalidMetadata.
func checkTableUpdates(updates []table.Update) error {
	for i, u := range updates {
		if u.Action() != table.UpdateSetStatistics {
			continue
		}
		f, err := DecodeFields[struct {
			SnapshotID int64 `json:"snapshot-id"`
			Statistics *struct {
				SnapshotID int64 `json:"snapshot-id"`
			} `json:"statistics"`
		}](u)
		if err != nil {
			return err
		}
		if f.Statistics != nil && f.SnapshotID != 0 && f.SnapshotID != f.Statistics.SnapshotID {
			return Errorf(ErrInvalidMetadata, "update %d (set-statistics): snapshot-id %d differs from the statistics file's snapshot-id %d", i, f.SnapshotID, f.Statistics.SnapshotID)
		}
	}
	return nil
}

// checkTableMetadata refuses next (the metadata a commit or create would
// write; base is the current metadata, nil for a create) when it breaks a
// rule of tableProblems that base does not already break, or when
// iceberg-go cannot parse its JSON js back. Errors: ErrInvalidMetadata,
// naming the first new problem.
func checkTableMetadata(base, next table.Metadata, js []byte) error {
	var old []string
	if base != nil {
		old = tableProblems(base)
	}
	return checkNewProblems(old, tableProblems(next), "table", js, func(b []byte) error {
		_, err := table.ParseMetadataBytes(b)
		return err
	})
}

// checkNewProblems refuses a change whose result has a problem (next) that
// the metadata before it (old) did not have, or whose JSON js does not
// parse back. Errors: ErrInvalidMetadata, naming the first new problem.
func checkNewProblems(old, next []string, kind string, js []byte, parse func([]byte) error) error {
	for _, p := range next {
		if !slices.Contains(old, p) {
			return Errorf(ErrInvalidMetadata, "%s", p)
		}
	}
	if err := parse(js); err != nil {
		return Errorf(ErrInvalidMetadata, "the resulting %s metadata does not parse: %v", kind, err)
	}
	return nil
}

// tableProblems lists the rules of the Iceberg table spec
// (https://iceberg.apache.org/spec/) that md breaks and iceberg-go's
// builder does not check, one stable message each (the same problem gives
// the same text in base and next).
func tableProblems(md table.Metadata) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	var cur map[int]fieldPath
	if sc := md.CurrentSchema(); sc != nil {
		cur = fieldPaths(sc)
	}

	for _, sc := range md.Schemas() {
		for _, p := range schemaProblems(sc) {
			add("schema %d: %s", sc.ID, p)
		}
	}

	// Partition specs and sort orders are checked against the current
	// schema, the one writers bind them to. An old spec whose source column
	// was dropped is legal (readers skip it); the default spec or order
	// losing its source is not (no engine could write the table).
	for _, spec := range md.PartitionSpecs() {
		isDefault := spec.ID() == md.DefaultPartitionSpec()
		for _, f := range spec.Fields() {
			if p := transformProblem(cur, f.Transform, f.SourceIDs, isDefault); p != "" {
				add("partition spec %d field %s: %s", spec.ID(), f.Name, p)
			}
		}
	}
	for _, so := range md.SortOrders() {
		isDefault := so.OrderID() == md.DefaultSortOrder()
		for _, f := range so.Fields() {
			if p := transformProblem(cur, f.Transform, f.SourceIDs, isDefault); p != "" {
				add("sort order %d field %v: %s", so.OrderID(), f.SourceIDs, p)
			}
		}
	}

	schemaIDs := map[int]bool{}
	for _, sc := range md.Schemas() {
		schemaIDs[sc.ID] = true
	}
	for _, s := range md.Snapshots() {
		if s.SnapshotID < 0 {
			// current-snapshot-id -1 means "no snapshot" to Java and
			// pyiceberg; every writer generates non-negative ids.
			add("snapshot %d: snapshot-id must not be negative", s.SnapshotID)
		}
		if s.SequenceNumber < 0 {
			add("snapshot %d: sequence-number %d must not be negative", s.SnapshotID, s.SequenceNumber)
		}
		if s.SchemaID != nil && !schemaIDs[*s.SchemaID] {
			add("snapshot %d: schema-id %d is not a schema of the table", s.SnapshotID, *s.SchemaID)
		}
		if md.Version() >= 2 {
			if s.ManifestList == "" {
				add("snapshot %d: manifest-list is required", s.SnapshotID)
			}
			if s.Summary == nil {
				add("snapshot %d: summary is required", s.SnapshotID)
			}
		}
		if s.Summary != nil {
			switch s.Summary.Operation {
			case table.OpAppend, table.OpReplace, table.OpOverwrite, table.OpDelete:
			default:
				add("snapshot %d: summary operation %q is not one of append, replace, overwrite, delete", s.SnapshotID, s.Summary.Operation)
			}
		}
	}

	for name, ref := range md.Refs() {
		if name == "" {
			add("snapshot ref names must not be empty")
		}
		if name == table.MainBranch && ref.SnapshotRefType != table.BranchRef {
			add("snapshot ref %s must be a branch, not a %s", table.MainBranch, ref.SnapshotRefType)
		}
	}

	roots := tableRoots(md)
	for st := range md.Statistics() {
		what := fmt.Sprintf("statistics file for snapshot %d", st.SnapshotID)
		if md.SnapshotByID(st.SnapshotID) == nil {
			add("%s: snapshot %d is not a snapshot of the table", what, st.SnapshotID)
		}
		if p := statisticsPathProblem(st.StatisticsPath, roots); p != "" {
			add("%s: %s", what, p)
		}
		if st.FileSizeInBytes < 0 || st.FileFooterSizeInBytes < 0 {
			add("%s: file-size-in-bytes %d and file-footer-size-in-bytes %d must not be negative", what, st.FileSizeInBytes, st.FileFooterSizeInBytes)
		} else if st.FileFooterSizeInBytes > st.FileSizeInBytes {
			add("%s: file-footer-size-in-bytes %d exceeds file-size-in-bytes %d", what, st.FileFooterSizeInBytes, st.FileSizeInBytes)
		}
		if st.BlobMetadata == nil {
			add("%s: blob-metadata is required (a list, possibly empty)", what)
		}
		for i, b := range st.BlobMetadata {
			// pyiceberg 0.12 loads only the two blob types the Puffin spec
			// defines; any other makes the whole table unloadable there.
			if !b.Type.IsKnown() {
				add("%s: blob %d: type %q is not %s or %s", what, i, b.Type, table.BlobTypeApacheDatasketchesThetaV1, table.BlobTypeDeletionVectorV1)
			}
			if b.Fields == nil {
				add("%s: blob %d: fields is required", what, i)
			}
			if b.SnapshotID < 0 || b.SequenceNumber < 0 {
				add("%s: blob %d: snapshot-id %d and sequence-number %d must not be negative", what, i, b.SnapshotID, b.SequenceNumber)
			}
		}
	}
	for st := range md.PartitionStatistics() {
		what := fmt.Sprintf("partition statistics file for snapshot %d", st.SnapshotID)
		if md.SnapshotByID(st.SnapshotID) == nil {
			add("%s: snapshot %d is not a snapshot of the table", what, st.SnapshotID)
		}
		if p := statisticsPathProblem(st.StatisticsPath, roots); p != "" {
			add("%s: %s", what, p)
		}
		if st.FileSizeInBytes < 0 {
			add("%s: file-size-in-bytes %d must not be negative", what, st.FileSizeInBytes)
		}
	}

	props := md.Properties()
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range props {
			if !yield(k) {
				return
			}
		}
	}) {
		if p := propertyProblem(k, props[k]); p != "" {
			add("property %s: %s", k, p)
		}
	}
	return out
}

// transformProblem checks one partition or sort field's transform against
// the current schema's fields: the transform must be one the spec defines (an unknown one —
// truncate[-5] parses as unknown — cannot be written by any engine, and
// pyiceberg refuses to load truncate[-5]), and apply to its source
// column's type; a source column must not sit inside a list or map. A
// missing source is a problem only for the default spec or order.
func transformProblem(fields map[int]fieldPath, t iceberg.Transform, sourceIDs []int, isDefault bool) string {
	if _, ok := t.(iceberg.UnknownTransform); ok {
		return fmt.Sprintf("unknown transform %q (known: identity, bucket[N], truncate[W], year, month, day, hour, void; N and W positive)", t)
	}
	if _, ok := t.(iceberg.VoidTransform); ok {
		return "" // a dropped field; its source may be gone
	}
	if fields == nil {
		return ""
	}
	for _, id := range sourceIDs {
		fp, ok := fields[id]
		if !ok {
			if isDefault {
				return fmt.Sprintf("source column %d is not in the current schema", id)
			}
			continue
		}
		if fp.inRepeated {
			return fmt.Sprintf("source column %s is inside a list or map", fp.name)
		}
		if !t.CanTransform(fp.field.Type) {
			return fmt.Sprintf("transform %s cannot be applied to column %s of type %s", t, fp.name, fp.field.Type)
		}
	}
	return ""
}

// statisticsPathProblem: a statistics file is read by engines and deleted
// with its snapshot (by expiry, Tarn's included), so it must be an absolute
// location inside one of the table's directories.
func statisticsPathProblem(loc string, roots []string) string {
	if loc == "" {
		return "statistics-path is required"
	}
	// storage.Within compares storage.NormLocation's form, in which Java's Hadoop
	// spellings of a local file (file:/x, /x) are file:///x.
	for _, r := range roots {
		if storage.Within(loc, r) {
			return ""
		}
	}
	return fmt.Sprintf("statistics-path %s is not inside the table's directories (%s)", loc, strings.Join(roots, ", "))
}

// fieldPath is a schema field with its dotted name and whether a list or
// map encloses it.
type fieldPath struct {
	field      iceberg.NestedField
	name       string
	inRepeated bool
	optionalUp bool // the field or one of its enclosing structs is optional
}

// fieldPaths indexes every field of schema (nested ones too) by id.
func fieldPaths(schema *iceberg.Schema) map[int]fieldPath {
	out := map[int]fieldPath{}
	var walk func(f iceberg.NestedField, prefix string, repeated, optional bool)
	walk = func(f iceberg.NestedField, prefix string, repeated, optional bool) {
		name := f.Name
		if prefix != "" {
			name = prefix + "." + f.Name
		}
		optional = optional || !f.Required
		out[f.ID] = fieldPath{field: f, name: name, inRepeated: repeated, optionalUp: optional}
		switch t := f.Type.(type) {
		case *iceberg.StructType:
			for _, c := range t.FieldList {
				walk(c, name, repeated, optional)
			}
		case *iceberg.ListType:
			walk(iceberg.NestedField{ID: t.ElementID, Name: "element", Type: t.Element, Required: t.ElementRequired}, name, true, optional)
		case *iceberg.MapType:
			walk(iceberg.NestedField{ID: t.KeyID, Name: "key", Type: t.KeyType, Required: true}, name, true, optional)
			walk(iceberg.NestedField{ID: t.ValueID, Name: "value", Type: t.ValueType, Required: t.ValueRequired}, name, true, optional)
		}
	}
	for _, f := range schema.Fields() {
		walk(f, "", false, false)
	}
	return out
}

// schemaProblems checks a table or view schema: identifier fields (spec
// "Identifier Field IDs": they exist, are required primitives other than
// float and double, and are not inside a list, a map or an optional
// struct; Java and pyiceberg refuse to load a schema that breaks this),
// and fixed types of length 0 (Parquet has no zero-length
// FIXED_LEN_BYTE_ARRAY, so no engine can write the column).
func schemaProblems(sc *iceberg.Schema) []string {
	var out []string
	fields := fieldPaths(sc)
	for _, id := range sc.IdentifierFieldIDs {
		fp, ok := fields[id]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("identifier field %d does not exist", id))
		case fp.inRepeated:
			out = append(out, fmt.Sprintf("identifier field %s is inside a list or map", fp.name))
		case fp.optionalUp:
			out = append(out, fmt.Sprintf("identifier field %s must be required (and so must the structs around it)", fp.name))
		default:
			switch fp.field.Type.(type) {
			case iceberg.Float32Type, iceberg.Float64Type:
				out = append(out, fmt.Sprintf("identifier field %s cannot be %s", fp.name, fp.field.Type))
			case iceberg.PrimitiveType:
			default:
				out = append(out, fmt.Sprintf("identifier field %s must be a primitive, not %s", fp.name, fp.field.Type))
			}
		}
	}
	for _, id := range slices.Sorted(func(yield func(int) bool) {
		for id := range fields {
			if !yield(id) {
				return
			}
		}
	}) {
		if ft, ok := fields[id].field.Type.(iceberg.FixedType); ok && ft.Len() < 1 {
			out = append(out, fmt.Sprintf("column %s: fixed length must be at least 1", fields[id].name))
		}
	}
	return out
}

// propertyKind is how engines parse a table property's value.
type propertyKind int

const (
	propPositiveInt    propertyKind = iota // an integer > 0
	propNonNegativeInt                     // an integer >= 0
	propBool                               // true or false
	propFileFormat                         // parquet, avro or orc
	propRowLevelMode                       // copy-on-write or merge-on-read
	propDistribution                       // none, hash or range
	propNameMapping                        // a JSON name mapping
)

// typedProperties are the Iceberg table properties (Java's
// org.apache.iceberg.TableProperties, pyiceberg's and iceberg-go's
// table/properties.go) whose values engines parse on every write or
// expiry; an unparsable one makes every such operation fail (Java throws
// NumberFormatException or IllegalArgumentException, pyiceberg raises
// ValueError). Other properties are free text to Tarn.
var typedProperties = map[string]propertyKind{
	table.MetadataPreviousVersionsMaxKey:      propPositiveInt,
	table.MetadataDeleteAfterCommitEnabledKey: propBool,
	table.CommitNumRetriesKey:                 propNonNegativeInt,
	table.CommitMinRetryWaitMsKey:             propNonNegativeInt,
	table.CommitMaxRetryWaitMsKey:             propNonNegativeInt,
	table.CommitTotalRetryTimeoutMsKey:        propNonNegativeInt,
	table.WriteTargetFileSizeBytesKey:         propPositiveInt,
	table.MinSnapshotsToKeepKey:               propPositiveInt,
	table.MaxSnapshotAgeMsKey:                 propPositiveInt,
	table.MaxRefAgeMsKey:                      propPositiveInt,
	table.ManifestMergeEnabledKey:             propBool,
	table.GCEnabledKey:                        propBool,
	table.WriteFormatDefaultKey:               propFileFormat,
	table.WriteDeleteModeKey:                  propRowLevelMode,
	"write.update.mode":                       propRowLevelMode,
	"write.merge.mode":                        propRowLevelMode,
	"write.distribution-mode":                 propDistribution,
	table.DefaultNameMappingKey:               propNameMapping,
}

// propertyProblem checks one property's value by its typedProperties kind.
func propertyProblem(k, v string) string {
	kind, ok := typedProperties[k]
	if !ok {
		return ""
	}
	oneOf := func(vals ...string) string {
		if slices.Contains(vals, strings.ToLower(v)) {
			return ""
		}
		return fmt.Sprintf("must be one of %s, got %q", strings.Join(vals, ", "), v)
	}
	switch kind {
	case propPositiveInt, propNonNegativeInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || (kind == propPositiveInt && n == 0) {
			if kind == propPositiveInt {
				return fmt.Sprintf("must be a positive integer, got %q", v)
			}
			return fmt.Sprintf("must be a non-negative integer, got %q", v)
		}
	case propBool:
		return oneOf("true", "false")
	case propFileFormat:
		return oneOf("parquet", "avro", "orc")
	case propRowLevelMode:
		return oneOf("copy-on-write", "merge-on-read")
	case propDistribution:
		return oneOf("none", "hash", "range")
	case propNameMapping:
		var nm iceberg.NameMapping
		if err := json.Unmarshal([]byte(v), &nm); err != nil {
			return fmt.Sprintf("is not a JSON name mapping: %v", err)
		}
	}
	return ""
}

// checkViewMetadata is checkTableMetadata for views (view spec
// https://iceberg.apache.org/view-spec/): every version needs a
// default-namespace (a list, possibly empty) and a summary (pyiceberg
// refuses to load either null), and its schemas follow schemaProblems.
// base is nil for a create. Errors: ErrInvalidMetadata.
func checkViewMetadata(base, next view.Metadata, js []byte) error {
	var old []string
	if base != nil {
		old = viewProblems(base)
	}
	return checkNewProblems(old, viewProblems(next), "view", js, func(b []byte) error {
		_, err := view.ParseMetadataBytes(b)
		return err
	})
}

func viewProblems(md view.Metadata) []string {
	var out []string
	for _, sc := range md.Schemas() {
		for _, p := range schemaProblems(sc) {
			out = append(out, fmt.Sprintf("schema %d: %s", sc.ID, p))
		}
	}
	for _, v := range md.Versions() {
		if v.DefaultNamespace == nil {
			out = append(out, fmt.Sprintf("view version %d: default-namespace is required (a list, possibly empty)", v.VersionID))
		}
		if v.Summary == nil {
			out = append(out, fmt.Sprintf("view version %d: summary is required", v.VersionID))
		}
	}
	return out
}
