package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"github.com/tarnhq/tarn/catalog"
)

// bucketLocations indexes every pointer's directories
// (catalog.PointerLocations) so that the overlap check of a change is a
// few seeks, not a scan of every pointer inside the write transaction:
//
//	locations   dir "/" 0x00 pointer-key -> empty
//
// dir is normalised (catalog.Pointer.Locations). A directory's own
// entries share the prefix dir+"/"+0x00; the entries of directories
// inside it share dir+"/". Several pointers stored before Tarn recorded
// locations may derive the same directory: each has its own entry.
var bucketLocations = []byte("locations")

func locationKey(dir string, pk []byte) []byte {
	k := append([]byte(strings.TrimRight(dir, "/")), '/', 0)
	return append(k, pk...)
}

// indexPointer replaces pk's entries: old's directories out (nil for a
// new pointer), next's in (nil for a dropped one).
func indexPointer(tx *bbolt.Tx, pk []byte, old, next *pointerRecord) error {
	b := tx.Bucket(bucketLocations)
	if old != nil {
		for _, d := range catalog.PointerLocations(catalog.Pointer(*old)) {
			if err := b.Delete(locationKey(d, pk)); err != nil {
				return err
			}
		}
	}
	if next != nil {
		for _, d := range catalog.PointerLocations(catalog.Pointer(*next)) {
			if err := b.Put(locationKey(d, pk), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// overlapping reports whether a pointer other than pk has a directory
// equal to, inside or containing one of dirs (catalog.LocationsOverlap).
func overlapping(tx *bbolt.Tx, pk []byte, dirs []string) bool {
	c := tx.Bucket(bucketLocations).Cursor()
	other := func(k []byte) bool {
		i := bytes.IndexByte(k, 0)
		return i >= 0 && !bytes.Equal(k[i+1:], pk)
	}
	for _, d := range dirs {
		dir := strings.TrimRight(d, "/") + "/"
		// The directory itself and everything inside it.
		for k, _ := c.Seek([]byte(dir)); k != nil && bytes.HasPrefix(k, []byte(dir)); k, _ = c.Next() {
			if other(k) {
				return true
			}
		}
		// Every directory containing it: each proper ancestor ending at
		// a slash (past the scheme's "//").
		start := strings.Index(dir, "://")
		if start < 0 {
			start = 0
		} else {
			start += 3
		}
		for i := start; i < len(dir)-1; i++ {
			if dir[i] != '/' {
				continue
			}
			anc := []byte(dir[:i+1] + "\x00")
			for k, _ := c.Seek(anc); k != nil && bytes.HasPrefix(k, anc); k, _ = c.Next() {
				if other(k) {
					return true
				}
			}
		}
	}
	return false
}

// buildLocationIndex fills an empty bucketLocations from every pointer
// (a file written before the index existed).
func buildLocationIndex(tx *bbolt.Tx) error {
	return tx.Bucket(bucketPointers).ForEach(func(k, v []byte) error {
		var r pointerRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("bolt: corrupt pointer %q: %w", k, err)
		}
		return indexPointer(tx, k, nil, &r)
	})
}
