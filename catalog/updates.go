package catalog

import (
	"encoding/json"
	"fmt"
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
// "removed" for "updates" and "removals"). iceberg-go's update types are
// unexported, so they are read through their own JSON encoding, which
// always uses the spec's names. Errors: an update that does not encode
// (none of iceberg-go's do not).
func FieldsOf(u interface{ Action() string }) (UpdateFields, error) {
	b, err := json.Marshal(u)
	if err != nil {
		return UpdateFields{}, fmt.Errorf("encode %s update: %w", u.Action(), err)
	}
	var f UpdateFields
	if err := json.Unmarshal(b, &f); err != nil {
		return UpdateFields{}, fmt.Errorf("read %s update: %w", u.Action(), err)
	}
	f.Action = u.Action()
	return f, nil
}
