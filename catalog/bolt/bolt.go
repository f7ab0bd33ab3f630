// Package bolt is the embedded catalog.Store: one bbolt file in the data
// directory, fsynced on every commit (bbolt's default), so an acknowledged
// commit survives kill -9 and power loss.
//
// Layout (version 1):
//
//	meta        "layout-version" -> "1"
//	namespaces  ns                 -> JSON properties
//	pointers    ns 0x00 name       -> JSON {kind, metadata-location, version, locations}
//	idempotency key                -> JSON stored response (see idempotency.go)
//	locations   dir "/" 0x00 ns 0x00 name -> empty (locations.go)
//	records     collection (nested bucket) / key -> opaque value (records.go)
//
// where ns is the namespace levels joined by 0x1F (levels never hold
// control characters; catalog.Namespace.Validate refuses them).
package bolt

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/errclass"
)

// LayoutVersion is the on-disk layout this build reads and writes. A later
// release that changes the layout migrates files that carry an older one.
const LayoutVersion = "1"

// FileName is the name of the bbolt file inside the data directory.
const FileName = "tarn.db"

// openTimeout bounds the wait for bbolt's file lock, so a second Tarn on the
// same data directory fails at once (ErrInUse) instead of hanging. The lock
// is released by the kernel when its holder exits, even by kill -9, so the
// wait only rides out a predecessor that is exiting; bbolt retries every
// 50 ms within it.
const openTimeout = 200 * time.Millisecond

var (
	bucketMeta        = []byte("meta")
	bucketNamespaces  = []byte("namespaces")
	bucketPointers    = []byte("pointers")
	bucketIdempotency = []byte("idempotency")
	keyLayoutVersion  = []byte("layout-version")
)

const (
	levelSep = 0x1F
	nameSep  = 0x00
)

// ErrLayoutVersion is returned by Open for a file written by a release with
// another layout.
var ErrLayoutVersion = errclass.New(errclass.Internal, "bolt: unsupported layout version")

// Store is the bbolt catalog.Store.
type Store struct {
	db *bbolt.DB
}

var (
	_ catalog.Store            = (*Store)(nil)
	_ catalog.IdempotencyStore = (*Store)(nil)
	_ catalog.RecordStore      = (*Store)(nil)
)

// Open opens (creating if needed) dir/tarn.db. Errors: ErrLayoutVersion;
// *InUseError (ErrInUse) within openTimeout when another process holds the
// file; the file system's (fs.ErrPermission and the like), wrapped.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("bolt: create data dir: %w", err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: openTimeout})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, &InUseError{Path: path, PID: lockHolder(path)}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return nil, fmt.Errorf("bolt: %w", err) // it names the file already
	}
	if err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketNamespaces, bucketPointers, bucketIdempotency} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		if tx.Bucket(bucketLocations) == nil {
			if _, err := tx.CreateBucket(bucketLocations); err != nil {
				return err
			}
			if err := buildLocationIndex(tx); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch v := meta.Get(keyLayoutVersion); {
		case v == nil:
			return meta.Put(keyLayoutVersion, []byte(LayoutVersion))
		case string(v) != LayoutVersion:
			return fmt.Errorf("%w: file has %q, this release reads %q", ErrLayoutVersion, v, LayoutVersion)
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close releases the file.
func (s *Store) Close() error { return s.db.Close() }

func nsKey(ns catalog.Namespace) []byte {
	return []byte(strings.Join(ns, string(rune(levelSep))))
}

func decodeNS(k []byte) catalog.Namespace {
	return strings.Split(string(k), string(rune(levelSep)))
}

func pointerKey(id catalog.Ident) []byte {
	k := nsKey(id.Namespace)
	k = append(k, nameSep)
	return append(k, id.Name...)
}

type pointerRecord struct {
	Kind             catalog.Kind `json:"kind"`
	MetadataLocation string       `json:"metadata-location"`
	Version          int64        `json:"version"`
	Locations        []string     `json:"locations,omitempty"`
}

func getPointer(tx *bbolt.Tx, id catalog.Ident) (pointerRecord, bool, error) {
	v := tx.Bucket(bucketPointers).Get(pointerKey(id))
	if v == nil {
		return pointerRecord{}, false, nil
	}
	var r pointerRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return r, false, fmt.Errorf("bolt: corrupt pointer %s: %w", id, err)
	}
	return r, true, nil
}

// putPointer writes id's pointer r and re-indexes its directories.
func putPointer(tx *bbolt.Tx, id catalog.Ident, r pointerRecord) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	pk := pointerKey(id)
	old, ok, err := getPointer(tx, id)
	if err != nil {
		return err
	}
	var prev *pointerRecord
	if ok {
		prev = &old
	}
	if err := indexPointer(tx, pk, prev, &r); err != nil {
		return err
	}
	return tx.Bucket(bucketPointers).Put(pk, v)
}

// deletePointer removes id's pointer r and its index entries.
func deletePointer(tx *bbolt.Tx, id catalog.Ident, r pointerRecord) error {
	if err := indexPointer(tx, pointerKey(id), &r, nil); err != nil {
		return err
	}
	return tx.Bucket(bucketPointers).Delete(pointerKey(id))
}

func namespaceExists(tx *bbolt.Tx, ns catalog.Namespace) bool {
	return tx.Bucket(bucketNamespaces).Get(nsKey(ns)) != nil
}

// Page tokens are base64url of a listing tag and the last key returned, so
// a token from one listing (or garbage) is refused by another.
const (
	tagNamespaces byte = 'n'
	tagPointers   byte = 'p'
)

func encodeToken(tag byte, k []byte) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{tag}, k...))
}

func decodeToken(tag byte, t string) ([]byte, error) {
	k, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil || len(k) < 2 || k[0] != tag {
		return nil, fmt.Errorf("%w: malformed page token", catalog.ErrInvalidArgument)
	}
	return k[1:], nil
}

// scan visits the keys of b that start with prefix and pass match, in key
// order, starting after the page token; it hands at most page.Size of them to
// collect and returns the next page token ("" when nothing is left). tag
// names the listing in its tokens.
func scan(b *bbolt.Bucket, tag byte, prefix []byte, page catalog.Page, match func(k, v []byte) bool, collect func(k, v []byte) error) (string, error) {
	start, after := prefix, []byte(nil)
	if page.Token != "" {
		t, err := decodeToken(tag, page.Token)
		if err != nil {
			return "", err
		}
		if !bytes.HasPrefix(t, prefix) {
			return "", fmt.Errorf("%w: page token does not belong to this listing", catalog.ErrInvalidArgument)
		}
		start, after = t, t
	}
	var last []byte
	n := 0
	c := b.Cursor()
	for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if bytes.Equal(k, after) || !match(k, v) {
			continue
		}
		if page.Size > 0 && n == page.Size {
			return encodeToken(tag, last), nil
		}
		if err := collect(k, v); err != nil {
			return "", err
		}
		last = append(last[:0], k...)
		n++
	}
	return "", nil
}

func checkCtx(ctx context.Context) error { return ctx.Err() }
