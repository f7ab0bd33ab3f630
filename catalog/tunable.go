package catalog

import (
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// Table properties of the Delta output (package delta), named here so
// that the catalog's rule (TarnOnlyProperties) and the topic manager
// spell them as the publisher does.
const (
	PropDeltaEnabled            = "tarn.delta.enabled"
	PropDeltaLocation           = "tarn.delta.location"
	PropDeltaCheckpointInterval = "tarn.delta.checkpoint-interval"
)

// TarnOnlyProperties are table properties that only Tarn's own writers
// set (through TableIO): the Delta table's root, which the Delta
// publisher records (delta.PropLocation) and other catalogs may be
// pointed at. A client's create or commit that sets or removes one is
// refused (400), on every table.
var TarnOnlyProperties = []string{PropDeltaLocation}

// checkClientProperties refuses updates (or a create's properties) that
// set or remove a TarnOnlyProperties key. Errors: ErrInvalidArgument.
func checkClientProperties(updates []table.Update, created map[string]string) error {
	keys := make([]string, 0, len(created))
	for k := range created {
		keys = append(keys, k)
	}
	for _, u := range updates {
		switch u.Action() {
		case table.UpdateSetProperties, table.UpdateRemoveProperties:
			f, err := FieldsOf(u)
			if err != nil {
				return err
			}
			for k := range f.Updates {
				keys = append(keys, k)
			}
			keys = append(keys, f.Removals...)
		}
	}
	for _, k := range keys {
		if slices.Contains(TarnOnlyProperties, k) {
			return Errorf(ErrInvalidArgument, "table property %s is set by Tarn and cannot be set or removed by a client", k)
		}
	}
	return nil
}

// tunableOnly reports whether updates only set or remove tunable
// properties (Config.TunablePrefixes; at least one update).
func (c *Catalog) tunableOnly(updates []table.Update) bool {
	if len(updates) == 0 {
		return false
	}
	for _, u := range updates {
		var keys []string
		switch u.Action() {
		case table.UpdateSetProperties, table.UpdateRemoveProperties:
			f, err := FieldsOf(u)
			if err != nil {
				return false
			}
			for k := range f.Updates {
				keys = append(keys, k)
			}
			keys = append(keys, f.Removals...)
		default:
			return false
		}
		for _, k := range keys {
			if !c.tunable(k) {
				return false
			}
		}
	}
	return true
}

func (c *Catalog) tunable(key string) bool {
	for _, p := range c.tunablePrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}
