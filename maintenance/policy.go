package maintenance

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/tabledefaults"
)

// Table properties that steer maintenance, beside the Iceberg ones it
// honours (history.expire.*, write.target-file-size-bytes,
// commit.manifest.target-size-bytes).
const (
	// EnabledProperty turns maintenance of a table on or off. Tables Tarn
	// owns (a topic's table and its dead letter table) are maintained
	// unless it is "false"; any other table only when it is "true".
	EnabledProperty = "tarn.maintenance.enabled"
	// CompactMinFilesProperty: compaction runs when a partition has at
	// least this many small files (smaller than 75 % of the target size).
	CompactMinFilesProperty = "tarn.maintenance.compact.min-input-files"
	// OrphanOlderThanProperty: orphan removal deletes unreferenced files
	// older than this many ms, never less than MinOrphanAge.
	OrphanOlderThanProperty = "tarn.maintenance.orphans.older-than-ms"
	// OrphanIntervalProperty: orphan removal runs at most once per this
	// many ms (it lists the table's whole location and reads every
	// retained manifest).
	OrphanIntervalProperty = "tarn.maintenance.orphans.interval-ms"
	// ManifestMaxCountProperty: manifests are rewritten when main's head
	// has more data manifests than this.
	ManifestMaxCountProperty = "tarn.maintenance.manifests.max-count"
	// MaxSnapshotsProperty: expiry keeps at most this many of main's
	// newest snapshots beside those history.expire.max-snapshot-age-ms
	// keeps (whichever is fewer; history.expire.min-snapshots-to-keep
	// still wins); 0: no cap, Iceberg's rules alone.
	MaxSnapshotsProperty = "tarn.maintenance.expire.max-snapshots"
	// TagIntervalProperty: the tag job tags main's head (TagPrefix and
	// the snapshot's UTC time) when the newest such tag's snapshot is at
	// least this many ms older than the head; 0: no tags.
	TagIntervalProperty = "tarn.maintenance.tags.interval-ms"
	// TagMaxAgeProperty: the max-ref-age-ms of the tags the tag job
	// makes: expiry drops a tag, and then its snapshot, once the tagged
	// snapshot is older than this many ms.
	TagMaxAgeProperty = "tarn.maintenance.tags.max-age-ms"
)

// TagPrefix starts the name of every tag the tag job makes (and of no
// other tag it considers): "tarn-" and the tagged snapshot's UTC time,
// e.g. tarn-20261201T201500Z (TagName).
const TagPrefix = "tarn-"

// Defaults of a table's maintenance policy, used when its properties do
// not say otherwise.
const (
	// DefaultCompactMinFiles: at a 1 s commit cadence a partition gains a
	// file a second; 10 keeps the live file count near 10 + one interval's
	// worth of commits without rewriting after every pass.
	DefaultCompactMinFiles = 10
	// DefaultCompactTargetBytes is the compacted file size when the table
	// has no write.target-file-size-bytes: the pipelines' default flush
	// size (ingest/pipeline), not iceberg-go's 512 MiB, so that a
	// streaming table's files stop being rewritten once they are as large
	// as a busy topic's batches.
	DefaultCompactTargetBytes = 128 << 20
	// MinOrphanAge is the floor of the orphan cutoff: a file younger than
	// this may belong to a commit in flight in another process.
	MinOrphanAge = time.Hour
	// DefaultOrphanAge is the default orphan cutoff: a day leaves any
	// stuck writer ample time and still bounds the garbage.
	DefaultOrphanAge = 24 * time.Hour
	// DefaultOrphanInterval: orphan removal is expensive (a listing and
	// every manifest), and orphans are rare; hourly is plenty.
	DefaultOrphanInterval = time.Hour
	// DefaultManifestMaxCount: with manifest merging on (tabledefaults)
	// appends already keep the count near
	// commit.manifest.min-count-to-merge; this catches tables without it.
	DefaultManifestMaxCount = 32
	// DefaultMaxSnapshots is the snapshot cap of an owned table: at a 1 s
	// commit cadence the newest 200 are the last 3⅓ minutes, at 250 ms
	// the last 50 s. With the tags below, a streaming table's
	// metadata.json stays near 300 KB (docs/maintenance.md) instead of
	// growing to 3,600 snapshots (~3.5 MB, rewritten on every commit) in
	// the hour history.expire.max-snapshot-age-ms keeps.
	DefaultMaxSnapshots = 200
	// DefaultTagInterval: an owned table's head is tagged every 10
	// minutes, so time travel reaches back DefaultTagMaxAge at that
	// granularity after the dense history ends.
	DefaultTagInterval = 10 * time.Minute
	// DefaultTagMaxAge: tags are kept a day (144 tags at
	// DefaultTagInterval), long enough to re-read yesterday's state and
	// short enough that the data files only tags hold are bounded.
	DefaultTagMaxAge = 24 * time.Hour
)

// Policy is one table's maintenance settings, from its properties.
type Policy struct {
	// Enabled: the scheduler maintains the table (EnabledProperty).
	Enabled bool
	// CompactMinFiles: small files per partition that trigger compaction.
	CompactMinFiles int
	// CompactTargetBytes: the size compaction bin-packs files to
	// (write.target-file-size-bytes, else DefaultCompactTargetBytes).
	CompactTargetBytes int64
	// MaxSnapshotAge: snapshots older than this (beyond the newest
	// MinSnapshotsToKeep of each branch) are expired. From
	// history.expire.max-snapshot-age-ms; for an owned table without it,
	// tabledefaults.MaxSnapshotAge; otherwise Iceberg's 5 days.
	MaxSnapshotAge time.Duration
	// OrphanAge: unreferenced files older than this are removed; never
	// below MinOrphanAge.
	OrphanAge time.Duration
	// OrphanInterval: least time between two orphan removals.
	OrphanInterval time.Duration
	// ManifestMaxCount: data manifests in main's head above which
	// manifests are rewritten.
	ManifestMaxCount int
	// MaxSnapshots: main's newest snapshots expiry keeps at most (beyond
	// MaxSnapshotAge's rule, fewer of the two); 0: no cap. From
	// MaxSnapshotsProperty; DefaultMaxSnapshots for an owned table, 0 for
	// any other.
	MaxSnapshots int
	// TagInterval: the least time between two snapshots the tag job tags;
	// 0: no tags. From TagIntervalProperty; DefaultTagInterval for an
	// owned table, 0 for any other.
	TagInterval time.Duration
	// TagMaxAge: the max-ref-age of the tags made (TagMaxAgeProperty,
	// DefaultTagMaxAge); at least 1 ms.
	TagMaxAge time.Duration
}

// propertyPrefix starts every property of this package.
const propertyPrefix = "tarn.maintenance."

// TunablePrefixes are the key prefixes of this package's table
// properties a REST client may set or remove on a table Tarn owns (the
// catalog's Config.TunablePrefixes): tarn.maintenance.* and the
// compaction target size (write.target-file-size-bytes). The Iceberg
// properties maintenance honours that the owned-table defaults set
// (history.expire.*, commit.manifest.*) are tabledefaults.TunablePrefixes.
var TunablePrefixes = []string{propertyPrefix, table.WriteTargetFileSizeBytesKey}

// ValidateProperties checks the tarn.maintenance.* keys of a table's
// properties: each must be one of this package's and parse (a bool for
// EnabledProperty, an integer for the others), so that a typo such as
// tarn.maintenance.enabled=yes is refused instead of silently read as the
// default. It is the catalog's Config.ValidateTableProperties. Errors name
// the key and what it wants.
func ValidateProperties(props iceberg.Properties) error {
	for k, v := range props {
		if !strings.HasPrefix(k, propertyPrefix) {
			continue
		}
		switch k {
		case EnabledProperty:
			if _, err := strconv.ParseBool(v); err != nil {
				return fmt.Errorf("%s must be true or false, got %q", k, v)
			}
		case CompactMinFilesProperty, OrphanOlderThanProperty, OrphanIntervalProperty, ManifestMaxCountProperty,
			MaxSnapshotsProperty, TagIntervalProperty, TagMaxAgeProperty:
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
				return fmt.Errorf("%s must be a non-negative integer, got %q", k, v)
			}
		default:
			return fmt.Errorf("unknown maintenance property %s (known: %s)", k, strings.Join([]string{EnabledProperty,
				CompactMinFilesProperty, OrphanOlderThanProperty, OrphanIntervalProperty, ManifestMaxCountProperty,
				MaxSnapshotsProperty, TagIntervalProperty, TagMaxAgeProperty}, ", "))
		}
	}
	return nil
}

// PolicyOf reads props (a table's properties); owned says whether Tarn
// owns the table, which turns maintenance on by default and applies
// tabledefaults.MaxSnapshotAge, DefaultMaxSnapshots and
// DefaultTagInterval when the table lacks the property (a table another
// engine writes keeps Iceberg's rules and gets no tags unless asked).
func PolicyOf(props iceberg.Properties, owned bool) Policy {
	p := Policy{
		Enabled:            props.GetBool(EnabledProperty, owned),
		CompactMinFiles:    props.GetInt(CompactMinFilesProperty, DefaultCompactMinFiles),
		CompactTargetBytes: props.GetInt64(table.WriteTargetFileSizeBytesKey, DefaultCompactTargetBytes),
		OrphanAge:          time.Duration(props.GetInt64(OrphanOlderThanProperty, DefaultOrphanAge.Milliseconds())) * time.Millisecond,
		OrphanInterval:     time.Duration(props.GetInt64(OrphanIntervalProperty, DefaultOrphanInterval.Milliseconds())) * time.Millisecond,
		ManifestMaxCount:   props.GetInt(ManifestMaxCountProperty, DefaultManifestMaxCount),
	}
	age, maxSnaps, tagEvery := table.MaxSnapshotAgeMsDefault, 0, int64(0)
	if owned {
		age, maxSnaps, tagEvery = tabledefaults.MaxSnapshotAge.Milliseconds(), DefaultMaxSnapshots, DefaultTagInterval.Milliseconds()
	}
	p.MaxSnapshots = props.GetInt(MaxSnapshotsProperty, maxSnaps)
	p.TagInterval = time.Duration(props.GetInt64(TagIntervalProperty, tagEvery)) * time.Millisecond
	p.TagMaxAge = time.Duration(max(props.GetInt64(TagMaxAgeProperty, DefaultTagMaxAge.Milliseconds()), 1)) * time.Millisecond
	p.MaxSnapshotAge = time.Duration(props.GetInt64(table.MaxSnapshotAgeMsKey, age)) * time.Millisecond
	if p.CompactMinFiles < 2 {
		p.CompactMinFiles = 2
	}
	if p.CompactTargetBytes <= 0 {
		p.CompactTargetBytes = DefaultCompactTargetBytes
	}
	p.OrphanAge = max(p.OrphanAge, MinOrphanAge)
	if p.ManifestMaxCount < 1 {
		p.ManifestMaxCount = DefaultManifestMaxCount
	}
	return p
}
