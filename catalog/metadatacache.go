package catalog

import (
	"context"
	"sync"

	"github.com/apache/iceberg-go/table"
	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultMetadataCacheBytes is the default budget of a replica's metadata
// cache (Config.MetadataCacheBytes), counted in uncompressed metadata
// JSON: a few hundred tables' metadata of a few hundred KB each, small
// beside the ingest memory budget.
const DefaultMetadataCacheBytes = 64 << 20

// metadataCacheEntries bounds the entries whatever their size (the LRU
// needs a count), well above what the byte budget lets in for real
// metadata files.
const metadataCacheEntries = 1 << 16

// metadataCache keeps the metadata files this replica read or wrote,
// uncompressed and (for tables, on first use) parsed, keyed by metadata
// location. It cannot go stale: a metadata file is never rewritten in
// place (Tarn writes each version under a new name with create-only
// writes, and the Iceberg spec makes every commit a new file), and the
// pointer that names the current file is read from the Store on every
// load, so a commit made through another replica is seen by the next
// load here; only the file read and the parse are saved when the
// pointer is unchanged. Least recently used entries go past the byte
// budget. Safe for concurrent use; entries are read-only.
type metadataCache struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[string, *cachedMetadata]
	bytes int64 // of the entries in lru
	max   int64
	m     *metrics
}

// cachedMetadata is one metadata file: its JSON, and the table metadata
// parsed from it once, when first asked for.
type cachedMetadata struct {
	js   []byte
	once sync.Once
	md   table.Metadata
	err  error
}

// newMetadataCache returns a cache of at most maxBytes (0: none kept).
func newMetadataCache(maxBytes int64, m *metrics) *metadataCache {
	c := &metadataCache{max: maxBytes, m: m}
	c.lru, _ = simplelru.NewLRU(metadataCacheEntries, func(_ string, e *cachedMetadata) { c.bytes -= int64(len(e.js)) })
	return c
}

// table returns the parsed table metadata, parsing it on first use.
func (e *cachedMetadata) table() (table.Metadata, error) {
	e.once.Do(func() {
		if e.md == nil {
			e.md, e.err = table.ParseMetadataBytes(e.js)
		}
	})
	return e.md, e.err
}

// get returns the entry of loc, reading it from wh on a miss and checking
// on a hit that the file still exists (opened, not read). Errors: the
// warehouse's open and read errors (nothing is cached then).
func (c *metadataCache) get(ctx context.Context, wh *Warehouse, loc string) (*cachedMetadata, error) {
	c.mu.Lock()
	e, ok := c.lru.Get(loc)
	c.mu.Unlock()
	if ok {
		// The file must still be there: a load of a table whose current
		// metadata file was deleted fails as it did before the cache
		// (the REST Compatibility Kit's
		// testLoadTableWithMissingMetadataFile), since a client given
		// this location would fail to read it.
		if err := wh.checkExists(ctx, loc); err != nil {
			return nil, err
		}
		c.m.metadataCacheHits.Inc()
		return e, nil
	}
	c.m.metadataCacheMisses.Inc()
	js, err := wh.readMetadataJSON(ctx, loc)
	if err != nil {
		return nil, err
	}
	return c.put(loc, js, nil), nil
}

// put caches the metadata file at loc, just written or read (md its
// parsed table metadata when known), and returns its entry.
func (c *metadataCache) put(loc string, js []byte, md table.Metadata) *cachedMetadata {
	e := &cachedMetadata{js: js, md: md}
	if int64(len(js)) > c.max {
		return e // would evict everything else
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.lru.Get(loc); ok {
		return old // a concurrent reader was first: share its parse
	}
	c.lru.Add(loc, e)
	c.bytes += int64(len(js))
	for c.bytes > c.max {
		c.lru.RemoveOldest()
	}
	return e
}
