package catalog

import (
	"encoding/json"
	"fmt"

	"github.com/apache/iceberg-go/table"
)

// UpdateFields is what a decoded table or view update carries that moves
// files or changes properties: set-location's location, set-properties'
// updates, remove-properties' removals (REST spec, components/schemas
// SetLocationUpdate, SetPropertiesUpdate, RemovePropertiesUpdate).
type UpdateFields struct {
	Action   string            `json:"action"`
	Location string            `json:"location,omitempty"`
	Updates  map[string]string `json:"updates,omitempty"`
	Removals []string          `json:"removals,omitempty"`
}

// FieldsOf returns the fields of u, a table.Update or view.Update as
// iceberg-go decoded it: the values its Apply will use, whatever JSON
// spelling the client sent (iceberg-go accepts the legacy "updated" and
// "removed" for "updates" and "removals"). See DecodeFields. Errors: an
// update that does not encode (none of iceberg-go's do not).
func FieldsOf(u interface{ Action() string }) (UpdateFields, error) {
	f, err := DecodeFields[UpdateFields](u)
	if err != nil {
		return UpdateFields{}, fmt.Errorf("read %s update: %w", u.Action(), err)
	}
	f.Action = u.Action()
	return f, nil
}

// AddedSnapshot returns the snapshot of u, an add-snapshot update
// (table.UpdateAddSnapshot) as iceberg-go staged or decoded it, for a
// caller that changes its summary and stages it again with
// table.NewAddSnapshotUpdate. The snapshot is a copy read through
// DecodeFields: changing it does not change u. Errors: u carries no
// snapshot.
func AddedSnapshot(u table.Update) (*table.Snapshot, error) {
	v, err := DecodeFields[struct {
		Snapshot *table.Snapshot `json:"snapshot"`
	}](u)
	if err != nil {
		return nil, fmt.Errorf("read %s update: %w", u.Action(), err)
	}
	if v.Snapshot == nil {
		return nil, fmt.Errorf("read %s update: no snapshot", u.Action())
	}
	return v.Snapshot, nil
}

// DecodeFields reads the fields of v, one of iceberg-go's table or view
// updates or requirements (table.Update, view.Update, table.Requirement,
// view.Requirement), into a T whose fields carry the REST spec's JSON
// names (components/schemas TableUpdate, TableRequirement,
// ViewRequirement). iceberg-go's concrete update and requirement types
// are unexported (v0.7.0: only their constructors and Apply/Validate
// are), so the one way to their fields is their own JSON encoding, which
// always uses the spec's names: v is encoded and the result decoded into
// T, members T lacks ignored. Every such read in Tarn goes through here,
// so that the day iceberg-go exports accessors only this function
// changes. Errors: v does not encode, or its JSON does not fit T.
func DecodeFields[T any](v any) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		return out, fmt.Errorf("encode %T: %w", v, err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, fmt.Errorf("decode %T: %w", v, err)
	}
	return out, nil
}
