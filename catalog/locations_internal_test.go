package catalog

import (
	"testing"

	"github.com/tarnhq/tarn/storage"
)

// Regression: locations were compared as written, so one file had two
// spellings that compared differently — the percent-encoded one
// iceberg-go writes (my%20dir) and the raw one a location keeps (my dir):
// purge kept a table's files, and a file named through an encoded dot
// segment (t/%2E%2E/other/f, which a file:// FileIO opens as other/f)
// counted as inside t, so expiry's confinement would delete another
// table's file; Java's Hadoop spelling of a local file (file:/x) was
// another form again. insideAny (purge, expiry), LocationsOverlap and the
// statistics-path check compare storage.NormLocation's one form.
func TestLocationsComparedInOneForm(t *testing.T) {
	t.Parallel()
	dirs := []string{"file:///wh/p/my dir/t", "s3://b/wh/données/t"}
	for _, tc := range []struct {
		file string
		in   bool
	}{
		{"file:///wh/p/my%20dir/t/data/a.parquet", true},
		{"file:///wh/p/my dir/t/metadata/00001-x.metadata.json", true},
		{"file://localhost/wh/p/my%20dir/t/data/a.parquet", true},
		{"file:/wh/p/my%20dir/t/data/a.parquet", true}, // Java's Hadoop spelling
		{"FILE:/wh/p/my dir/t/data/a.parquet", true},
		{"/wh/p/my dir/t/data/a.parquet", true},
		{"s3a://b/wh/donn%C3%A9es/t/data/a.parquet", true},
		{"file:///wh/p/my%20dir/t/%2E%2E/u/data/a.parquet", false},
		{"file:///wh/p/my%20dir/t%2F..%2Fu/a.parquet", false},
		{"file:///wh/p/my%20dir/t2/a.parquet", false},
		{"file:///wh/p/my%2520dir/t/a.parquet", false},
		{"file:///wh/p/my%20dir/t", false},
	} {
		if got := insideAny(tc.file, dirs); got != tc.in {
			t.Errorf("insideAny(%q) = %v, want %v", tc.file, got, tc.in)
		}
	}
	if !LocationsOverlap([]string{storage.NormLocation("file:///wh/p/my%20dir/t")}, []string{"file:///wh/p/my dir/t"}) {
		t.Error("one directory in two spellings must overlap itself")
	}
	if !LocationsOverlap([]string{"file:///wh/p/my dir"}, []string{storage.NormLocation("file:///wh/p/my%20dir/t/")}) {
		t.Error("a directory inside another, spelled encoded, must overlap it")
	}
}
