// Package tabledefaults holds the table properties Tarn creates the
// tables it owns with (a topic's table and its dead letter table:
// ingest/pipeline EnsureTable), which keep a streaming table's metadata
// small at a 1 s commit cadence, and the snapshot age maintenance assumes
// for an owned table that lacks the property. Both the pipeline, which
// sets them, and maintenance, which honours them, import it; neither
// imports the other.
//
// They are Iceberg's own table properties (the Iceberg spec's "Table
// properties"; iceberg-go's table package names their keys), set on the
// table so every engine sees them, and overridable like any property: a
// REST client may change those TunablePrefixes name even on an owned
// table.
package tabledefaults

import (
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// MaxSnapshotAge is history.expire.max-snapshot-age-ms for tables Tarn
// owns: at most one hour of dense history for slow readers; maintenance
// also caps it at 200 snapshots (maintenance.DefaultMaxSnapshots, 3⅓
// minutes at a 1 s cadence) and keeps a tag every 10 minutes for a day,
// so that metadata.json stays flat while time travel reaches back a day.
// Iceberg's default is 5 days.
const MaxSnapshotAge = time.Hour

// Properties returns the properties a table Tarn owns is created with
// (a new map on every call):
//
//   - history.expire.max-snapshot-age-ms = 3600000 (MaxSnapshotAge) and
//     history.expire.min-snapshots-to-keep = 1: what expiry keeps.
//   - commit.manifest-merge.enabled = true and
//     commit.manifest.min-count-to-merge = 16: each append merges small
//     manifests (iceberg-go's default is off, one manifest per commit).
//   - write.metadata.delete-after-commit.enabled = true and
//     write.metadata.previous-versions-max = 10: old metadata.json files
//     are deleted as new ones are committed.
func Properties() iceberg.Properties {
	return iceberg.Properties{
		table.MaxSnapshotAgeMsKey:                 strconv.FormatInt(MaxSnapshotAge.Milliseconds(), 10),
		table.MinSnapshotsToKeepKey:               "1",
		table.ManifestMergeEnabledKey:             "true",
		table.ManifestMinMergeCountKey:            "16",
		table.MetadataDeleteAfterCommitEnabledKey: "true",
		table.MetadataPreviousVersionsMaxKey:      "10",
	}
}

// TunablePrefixes are the key prefixes of Properties' families a REST
// client may set or remove on a table Tarn owns (the catalog's
// Config.TunablePrefixes): snapshot retention (history.expire.*),
// manifest merging (commit.manifest.*, commit.manifest-merge.*) and
// metadata file cleanup (write.metadata.delete-after-commit.*,
// write.metadata.previous-versions-max).
var TunablePrefixes = []string{
	"history.expire.",
	"commit.manifest.",
	"commit.manifest-merge.",
	"write.metadata.delete-after-commit.",
	table.MetadataPreviousVersionsMaxKey,
}
