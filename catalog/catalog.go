package catalog

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tarnhq/tarn/storage"
)

// Config wires a Catalog.
type Config struct {
	// Store keeps namespaces and pointers. Required.
	Store Store
	// Warehouses are served by name (the REST prefix). At least one.
	Warehouses []*Warehouse
	// Logger receives commit and purge events; slog.Default() if nil.
	Logger *slog.Logger
	// ValidateTableProperties, when set, checks the properties of a
	// table being created, and those a commit changes (a
	// property kept as it was is not checked again); its error is
	// returned wrapped in ErrInvalidArgument (400). Tarn sets
	// maintenance.ValidateProperties.
	ValidateTableProperties func(iceberg.Properties) error
	// TunablePrefixes are the table properties a REST client may set or
	// remove on a table a topic owns (see Owners), each a key prefix
	// matched with strings.HasPrefix: a commit that only sets or removes
	// such keys is applied, any other is ErrTableOwnedForbidden, so the
	// exactly-once protocol and the schema stay Tarn's. None when empty.
	// Tarn sets the owned-table defaults' (tabledefaults.TunablePrefixes:
	// snapshot retention, manifest merging, metadata file cleanup),
	// maintenance's (maintenance.TunablePrefixes: tarn.maintenance.*, the
	// compaction target size) and the Delta output's
	// (delta.TunableProperties: its switch and checkpoint interval).
	TunablePrefixes []string
	// Metrics registers the tarn_catalog_* counters (metrics.go); none
	// when nil (they count, and nothing exports them). Tarn passes
	// prometheus.DefaultRegisterer; a test passes a registry of its own.
	Metrics prometheus.Registerer
	// MetadataCacheBytes is the budget of the replica's cache of metadata
	// files (metadatacache.go), in uncompressed JSON bytes;
	// DefaultMetadataCacheBytes when 0, no cache when negative.
	MetadataCacheBytes int64
}

// Catalog is the catalog service. It is safe for concurrent use; all
// coordination between writers is compare-and-swap in the Store.
type Catalog struct {
	store      Store
	warehouses map[string]*Warehouse
	log        *slog.Logger
	// owners is the ownership hook (SetOwners); nil when none.
	owners atomic.Pointer[ownersBox]
	// inflight: data files written by in-process writers, not committed yet.
	inflight inflight
	// staged: stage-created tables' directories, for signing before the
	// create commit (in the store's records, so on every replica).
	staged stagedTables
	// validateProps is Config.ValidateTableProperties.
	validateProps func(iceberg.Properties) error
	// tunablePrefixes is Config.TunablePrefixes.
	tunablePrefixes []string
	// observers are told of every commit (AddCommitObserver).
	observers observers
	metrics   *metrics
	// meta caches metadata files by location (metadatacache.go).
	meta *metadataCache
}

// checkTableProperties checks next, the properties of table id after a
// create or commit (base: before it; nil for a new table), against the
// limits (checkProperties), then runs Config.ValidateTableProperties on
// those that base does not have with the same value. Errors:
// ErrLimitExceeded, ErrInvalidArgument.
func (c *Catalog) checkTableProperties(id Ident, base, next iceberg.Properties) error {
	if err := checkProperties("table "+id.String(), base, next); err != nil {
		return err
	}
	if c.validateProps == nil {
		return nil
	}
	changed := iceberg.Properties{}
	for k, v := range next {
		if old, ok := base[k]; !ok || old != v {
			changed[k] = v
		}
	}
	if err := c.validateProps(changed); err != nil {
		return fmt.Errorf("%w: table %s: %v", ErrInvalidArgument, id, err)
	}
	return nil
}

// New returns a Catalog over cfg.Store. Errors wrap ErrInvalidArgument for
// a config without a store or warehouse; a failed registration of the
// metrics (cfg.Metrics has them already) is returned as it is.
func New(cfg Config) (*Catalog, error) {
	if cfg.Store == nil || len(cfg.Warehouses) == 0 {
		return nil, fmt.Errorf("%w: catalog needs a store and a warehouse", ErrInvalidArgument)
	}
	// A table belongs to the warehouse its metadata lies in: two
	// warehouses that nest or coincide would both claim it (and sign for
	// it with their own keys).
	for i, a := range cfg.Warehouses {
		for _, b := range cfg.Warehouses[i+1:] {
			if LocationsOverlap([]string{storage.NormLocation(a.Location)}, []string{storage.NormLocation(b.Location)}) {
				return nil, fmt.Errorf("%w: warehouses %q (%s) and %q (%s) overlap: give each a directory of its own", ErrInvalidArgument, a.Name, a.Location, b.Name, b.Location)
			}
		}
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	c := &Catalog{store: cfg.Store, warehouses: map[string]*Warehouse{}, log: cfg.Logger, validateProps: cfg.ValidateTableProperties,
		tunablePrefixes: slices.Clone(cfg.TunablePrefixes), metrics: m}
	if c.log == nil {
		c.log = slog.Default()
	}
	budget := cfg.MetadataCacheBytes
	if budget == 0 {
		budget = DefaultMetadataCacheBytes
	}
	c.meta = newMetadataCache(max(budget, 0), m)
	if rs, ok := cfg.Store.(RecordStore); ok {
		c.staged.rs = rs
	} else {
		c.staged.rs = &memRecords{}
	}
	for _, w := range cfg.Warehouses {
		c.warehouses[w.Name] = w
	}
	return c, nil
}

// TableWarehouse returns the warehouse table id belongs to: the one its
// metadata file lies in (warehouses do not nest, so there is at most
// one). In-process jobs that find tables by listing (maintenance) reach
// each through it. Errors: ErrNoSuchTable; ErrInvalidArgument when no
// configured warehouse holds the table's metadata.
func (c *Catalog) TableWarehouse(ctx context.Context, id Ident) (*Warehouse, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	p, err := c.store.LoadPointer(ctx, id, KindTable)
	if err != nil {
		return nil, err
	}
	for _, w := range c.warehouses {
		if w.Contains(p.MetadataLocation) {
			return w, nil
		}
	}
	return nil, Errorf(ErrInvalidArgument, "table %s: its metadata %s is in no configured warehouse", id, p.MetadataLocation)
}

// Warehouse returns the warehouse named name (the REST prefix), or the
// default warehouse when name is empty. Errors: ErrNoSuchWarehouse.
func (c *Catalog) Warehouse(name string) (*Warehouse, error) {
	name = strings.TrimSuffix(name, "/")
	if name == "" {
		name = DefaultWarehouse
	}
	w, ok := c.warehouses[name]
	if !ok {
		for _, cand := range c.warehouses {
			if cand.Location == name {
				return cand, nil
			}
		}
		return nil, Errorf(ErrNoSuchWarehouse, "Warehouse does not exist: %s", name)
	}
	return w, nil
}

// Store returns the store, for the server's own small interfaces over it
// (idempotency keys) found by type assertion.
func (c *Catalog) Store() Store { return c.store }

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// readMetadataJSON reads a table or view metadata file, gunzipping or
// un-zstd-ing it when compressed (write.metadata.compression-codec).
func (w *Warehouse) readMetadataJSON(ctx context.Context, loc string) ([]byte, error) {
	b, err := w.Read(ctx, loc)
	if err != nil {
		return nil, err
	}
	switch {
	case bytes.HasPrefix(b, gzipMagic):
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	case bytes.HasPrefix(b, zstdMagic):
		d, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(b, nil)
	}
	return b, nil
}

// encodeMetadata compresses metadata JSON per codec ("none", "gzip", "zstd").
func encodeMetadata(js []byte, codec string) ([]byte, error) {
	switch codec {
	case "", "none":
		return js, nil
	case "gzip":
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(js); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case "zstd":
		e, err := zstd.NewWriter(nil)
		if err != nil {
			return nil, err
		}
		defer e.Close()
		return e.EncodeAll(js, nil), nil
	}
	return nil, fmt.Errorf("%w: unsupported write.metadata.compression-codec %q", ErrInvalidArgument, codec)
}

var metadataVersionRe = regexp.MustCompile(`^v?(\d+)[-.]`)

// nextMetadataVersion is the number of the metadata file after loc
// (<NNNNN>-<uuid>.metadata.json, or the legacy v<N>.metadata.json). When
// loc's name carries no number (a create, or a registered file named
// otherwise) it is fallback, which callers set to the pointer version: 0
// for a create, so the first file is 00000-..., as Java names it.
func nextMetadataVersion(loc string, fallback int64) int {
	if m := metadataVersionRe.FindStringSubmatch(path.Base(loc)); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return n + 1
		}
	}
	return int(fallback)
}

// Loaded is a table's or view's current state as the REST API returns it.
type Loaded struct {
	Ident Ident
	// MetadataLocation is "" for a staged create.
	MetadataLocation string
	// MetadataJSON is the metadata file's JSON (uncompressed); read-only
	// (it may be shared with the replica's metadata cache).
	MetadataJSON []byte
	// Version is the pointer version; 0 for a staged create.
	Version int64
	// Locations are the directories the table's files lie in
	// (Pointer.Locations; for a staged create those it will record);
	// empty when unknown (Directories falls back to the location).
	Locations []string
	// cached is the metadata cache's entry of MetadataJSON, when loaded
	// through it.
	cached *cachedMetadata
}

// TableMetadata returns the table metadata of MetadataJSON, parsed once
// per metadata file and replica when the Loaded came through the
// catalog's cache, else parsed now. The result is shared: read-only.
// Errors: the metadata does not parse (iceberg-go's errors).
func (l *Loaded) TableMetadata() (table.Metadata, error) {
	if l.cached != nil {
		return l.cached.table()
	}
	return table.ParseMetadataBytes(l.MetadataJSON)
}

// Directories is where the table's files lie, the current ones first:
// the location, write.data.path and write.metadata.path of its metadata,
// then any other directory it recorded (Locations: those it moved away
// from, whose files older snapshots still reference). Credentials and
// signatures for the table cover these. Errors: ErrInvalidArgument for
// metadata without a location.
func (l *Loaded) Directories() ([]string, error) {
	var md struct {
		Location   string            `json:"location"`
		Properties map[string]string `json:"properties"`
	}
	if err := json.Unmarshal(l.MetadataJSON, &md); err != nil || md.Location == "" {
		return nil, Errorf(ErrInvalidArgument, "metadata of %s has no location", l.Ident)
	}
	dirs := []string{storage.NormLocation(md.Location)}
	for _, k := range FilePathProperties {
		if v := md.Properties[k]; v != "" && !slices.Contains(dirs, storage.NormLocation(v)) {
			dirs = append(dirs, storage.NormLocation(v))
		}
	}
	for _, d := range l.Locations {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs, nil
}

// load reads the pointer of id (of kind) and its metadata file.
func (c *Catalog) load(ctx context.Context, wh *Warehouse, id Ident, kind Kind) (*Loaded, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	p, err := c.store.LoadPointer(ctx, id, kind)
	if err != nil {
		return nil, err
	}
	if err := wh.checkOwns(kind, id, p); err != nil {
		return nil, err
	}
	e, err := c.meta.get(ctx, wh, p.MetadataLocation)
	if err != nil {
		return nil, metadataReadError(err, p.MetadataLocation)
	}
	return &Loaded{Ident: id, MetadataLocation: p.MetadataLocation, MetadataJSON: e.js, Version: p.Version, Locations: p.Locations, cached: e}, nil
}

// exists reports whether id holds an object of kind.
func (c *Catalog) exists(ctx context.Context, id Ident, kind Kind) (bool, error) {
	if err := id.Validate(); err != nil {
		return false, err
	}
	_, err := c.store.LoadPointer(ctx, id, kind)
	if errors.Is(err, kind.NotFound()) {
		return false, nil
	}
	return err == nil, err
}

// list lists the objects of kind in ns, paged.
func (c *Catalog) list(ctx context.Context, ns Namespace, kind Kind, page Page) ([]Ident, string, error) {
	if err := ns.Validate(); err != nil {
		return nil, "", err
	}
	return c.store.ListPointers(ctx, ns, kind, page)
}
