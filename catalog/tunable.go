package catalog

import (
	"strings"

	"github.com/apache/iceberg-go/table"
)

// tunablePrefixes are the table properties an owner's defaults set for
// maintenance (maintenance.TableDefaults and its tarn.maintenance.*
// policy) that a REST client may change on a table a topic owns:
// snapshot retention, manifest merging, metadata file cleanup, the
// compaction target size. Nothing else about an owned table can change
// from outside, so the exactly-once protocol and the schema stay Tarn's.
var tunablePrefixes = []string{
	"history.expire.",
	"commit.manifest.",
	"commit.manifest-merge.",
	"write.metadata.delete-after-commit.",
	"write.metadata.previous-versions-max",
	"write.target-file-size-bytes",
	"tarn.maintenance.",
}

// tunableOnly reports whether updates only set or remove tunable
// properties (at least one update).
func tunableOnly(updates []table.Update) bool {
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
			if !tunable(k) {
				return false
			}
		}
	}
	return true
}

func tunable(key string) bool {
	for _, p := range tunablePrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}
