package catalog

import (
	"slices"
	"strings"

	"github.com/tarnhq/tarn/storage"
)

// Limits on what a client may create. Each is checked before anything
// is written and refused with ErrLimitExceeded (400 BadRequestException);
// README's "Limits" lists them. Existing objects beyond a limit (created
// before it, or registered from elsewhere) stay readable, droppable and
// committable: only what a request adds or grows is checked.
const (
	// MaxNameBytes bounds a namespace level or a table/view name, in
	// bytes of UTF-8. Engines' own limits are lower (Hive 128, Glue 255);
	// 1024 leaves room for any of them while keeping keys and messages
	// small.
	MaxNameBytes = 1024
	// MaxNamespaceDepth bounds a namespace's levels. Engines nest two or
	// three (catalog.database, Trino's schema); 16 is far past any of
	// them, and bounds the directories a new table's location nests
	// (one per level) and the ancestors every overlap check visits.
	MaxNamespaceDepth = 16
	// MaxIdentBytes bounds a whole identifier: its namespace levels and
	// name together, in bytes of UTF-8. The store keys a table by its
	// identifier (bbolt refuses keys over 32 KiB, and its location index
	// keys hold a directory too: see MaxLocationBytes); 4 KiB keeps every
	// key far below that and a PostgreSQL index entry possible.
	MaxIdentBytes = 4096
	// MaxLocationBytes bounds a table's or view's location and its path
	// properties (write.data.path, ...), in bytes: Linux's PATH_MAX is
	// 4096, and a data file's path adds the partition directories and a
	// file name to it. Tarn's own locations stay far below (levels and
	// names are cut to 64 characters); S3's keys stop at 1024 bytes
	// anyway.
	MaxLocationBytes = 2048

	// MaxProperties bounds the properties of a namespace, table or view:
	// Iceberg's per-column settings (write.metadata.metrics.column.*,
	// write.parquet.bloom-filter-enabled.column.*) of a 1000-column
	// table fit, twice over.
	MaxProperties = 2000
	// MaxPropertyKeyBytes bounds a property key: a setting's name, with
	// a column path at most.
	MaxPropertyKeyBytes = 1024
	// MaxPropertyValueBytes bounds a property value: the largest value
	// engines write is schema.name-mapping.default, a JSON name mapping
	// of every column (a few hundred KiB for the widest tables).
	MaxPropertyValueBytes = 1 << 20
	// MaxPropertiesBytes bounds all keys and values together: a table's
	// properties are rewritten into every metadata file a commit writes
	// and sent with every loadTable, and a namespace's are one value in
	// the store; 2 MiB keeps both cheap (a trial's 50 MB properties grew
	// the bbolt file by 400 MB for good).
	MaxPropertiesBytes = 2 << 20
)

// ValidateNew checks a namespace about to be created (or created in):
// Validate, MaxNamespaceDepth and MaxIdentBytes, and no level with a
// hidden character (storage.HiddenRune). Errors wrap ErrInvalidArgument, the
// limits ErrLimitExceeded.
func (n Namespace) ValidateNew() error {
	if err := n.Validate(); err != nil {
		return err
	}
	if len(n) > MaxNamespaceDepth {
		return Errorf(ErrLimitExceeded, "namespace has %d levels; at most %d are allowed", len(n), MaxNamespaceDepth)
	}
	if size := identBytes(n, ""); size > MaxIdentBytes {
		return Errorf(ErrLimitExceeded, "namespace is %d bytes long; at most %d are allowed for a whole identifier", size, MaxIdentBytes)
	}
	for _, l := range n {
		if err := checkNameChars("namespace level", l); err != nil {
			return err
		}
	}
	return nil
}

// ValidateNew checks an identifier about to be created (a create, a
// register, a rename's target), as Namespace.ValidateNew, the name
// included in MaxIdentBytes.
func (i Ident) ValidateNew() error {
	if err := i.Validate(); err != nil {
		return err
	}
	if err := i.Namespace.ValidateNew(); err != nil {
		return err
	}
	if size := identBytes(i.Namespace, i.Name); size > MaxIdentBytes {
		return Errorf(ErrLimitExceeded, "identifier is %d bytes long (namespace levels and name); at most %d are allowed", size, MaxIdentBytes)
	}
	return checkNameChars("name", i.Name)
}

func identBytes(ns Namespace, name string) int {
	n := len(name)
	for _, l := range ns {
		n += len(l)
	}
	return n
}

// checkNameChars refuses a name holding a hidden character (storage.HiddenRune).
func checkNameChars(what, s string) error {
	if i := strings.IndexFunc(s, storage.HiddenRune); i >= 0 {
		return Errorf(ErrInvalidArgument, "%s %q holds %U: a name may not contain control, format (zero-width, bidirectional) or non-ASCII space characters", what, s, []rune(s[i:])[0])
	}
	return nil
}

// checkProperties checks the properties of a namespace, table or view
// (what names it in messages) against the limits: every key or value
// next adds or changes (not in base with the same value) against
// MaxPropertyKeyBytes and MaxPropertyValueBytes, and the count and total
// size against MaxProperties and MaxPropertiesBytes when next has more
// of either than base (nil for a new object), so that an object already
// past a limit can still be changed without growing. Errors wrap
// ErrLimitExceeded.
func checkProperties(what string, base, next map[string]string) error {
	total := 0
	for _, k := range sortedKeys(next) {
		v := next[k]
		total += len(k) + len(v)
		if old, ok := base[k]; ok && old == v {
			continue
		}
		if len(k) > MaxPropertyKeyBytes {
			return Errorf(ErrLimitExceeded, "%s: property key %q is %d bytes long; at most %d are allowed", what, clip(k), len(k), MaxPropertyKeyBytes)
		}
		if len(v) > MaxPropertyValueBytes {
			return Errorf(ErrLimitExceeded, "%s: property %q is %d bytes long; at most %d are allowed", what, clip(k), len(v), MaxPropertyValueBytes)
		}
	}
	if len(next) > MaxProperties && len(next) > len(base) {
		return Errorf(ErrLimitExceeded, "%s: %d properties; at most %d are allowed", what, len(next), MaxProperties)
	}
	if total > MaxPropertiesBytes {
		baseTotal := 0
		for k, v := range base {
			baseTotal += len(k) + len(v)
		}
		if total > baseTotal {
			return Errorf(ErrLimitExceeded, "%s: properties are %d bytes long in all; at most %d are allowed", what, total, MaxPropertiesBytes)
		}
	}
	return nil
}

// CheckNamespaceProperties is checkProperties for namespace ns, whose
// properties change from base to next: what a Store checks, in the
// transaction that applies an update (UpdateNamespaceProperties), so
// that concurrent updates cannot together pass a limit. Errors wrap
// ErrLimitExceeded.
func CheckNamespaceProperties(ns Namespace, base, next map[string]string) error {
	return checkProperties("namespace "+ns.String(), base, next)
}

// sortedKeys returns m's keys in order, so that the first property a
// message names is always the same one.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// clip shortens s for a message: a limit's error must not echo a
// megabyte back.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// checkLocationLength refuses a location longer than MaxLocationBytes.
func checkLocationLength(loc string) error {
	if len(loc) > MaxLocationBytes {
		return Errorf(ErrLimitExceeded, "location %q is %d bytes long; at most %d are allowed", clip(loc), len(loc), MaxLocationBytes)
	}
	return nil
}
