package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
)

// The warehouse's FileIO hands iceberg-go manifest lists and manifests in
// the shape its readers accept: the smallest piece beside iceberg-go
// v0.7.0 for what its readers refuse in files engines write.
//
// Manifest lists. DuckDB 1.4 (duckdb-iceberg) writes every field of a manifest list as an
// optional ["null", T] union, also those the spec requires
// (https://iceberg.apache.org/spec/#manifest-lists: manifest_path, the
// counts, sequence numbers, ...; and contains_null of a partition field
// summary), and writes a non-null value in each. iceberg-go's
// ReadManifestList resolves the file against the spec's schema with
// twmb/avro, which refuses a writer union for a required reader field when
// it resolves the schemas ("avro: incompatible at manifest_path: reader
// string vs writer null"), before reading any value. So every reader of a
// snapshot DuckDB wrote failed: scan planning, compaction, expiry, orphan
// removal, manifest rewriting, purge. The Avro spec resolves a writer union
// against the selected branch of each value
// (https://avro.apache.org/docs/1.12.0/specification/#schema-resolution),
// so a null in a required field is the error, not the schema.
//
// DuckDB also names the partition field summary record element0 where
// Java and iceberg-go write r508, and Avro resolves records by name.
//
// Delete manifests. DuckDB 1.4 writes the header key "content" of a
// manifest of position deletes as "data" (its manifest list says
// "deletes"; https://iceberg.apache.org/spec/#manifests: content "data" or
// "deletes", the type of the files tracked). iceberg-go's manifest reader
// refuses a manifest whose header disagrees with the list ("manifest
// file's 'content' metadata indicates \"data\", but entry from manifest
// list indicates \"deletes\""), so planning any scan of a table DuckDB
// deleted from failed. And DuckDB writes file_format as the spec spells
// it, "parquet" (https://iceberg.apache.org/spec/#manifests: avro, orc,
// parquet or puffin), where iceberg-go's readers compare with "PARQUET",
// Java's spelling: iceberg-go refused to read DuckDB's delete files ("only
// parquet format is implemented, got parquet").
//
// Proposed upstream (iceberg-go): ReadManifestList resolves against a
// reader schema made nullable where the writer's is (and takes any record
// name for the field summary), and refuses a null in a required field
// after decoding; the manifest reader trusts the list's content when the
// header's disagrees with the entries; a manifest's file_format is parsed
// with FileFormatFromString (case-insensitive). Until then specIO
// re-encodes such a file when it is opened: a list with the required
// fields non-optional (narrowManifestList), a manifest with the right
// content label and file formats in upper case (specManifest). A null in
// a required field is an error naming the file.

// specIO is the warehouse's FileIO with Open and ReadFile going through
// narrowManifestList. It embeds the concrete FileIO, so it keeps every
// optional interface (WriteFileIO, ListableIO, BulkRemovableIO, StatIO,
// ...) that iceberg-go finds by type assertion.
func specIO(fs icebergio.IO) icebergio.IO {
	switch x := fs.(type) {
	case icebergio.LocalFS:
		return localSpecIO{x}
	case *blobfs.FileIO:
		return &blobSpecIO{x}
	}
	return fs
}

type localSpecIO struct{ icebergio.LocalFS }

func (l localSpecIO) Open(name string) (icebergio.File, error) {
	return openSpec(l.LocalFS.Open, name)
}

func (l localSpecIO) ReadFile(name string) ([]byte, error) {
	return readSpec(l.LocalFS.ReadFile, name)
}

type blobSpecIO struct{ *blobfs.FileIO }

// Unwrap returns the gocloud FileIO b serves through, for the writes
// only it can do (package delta's put-if-absent log files, gocloud's
// IfNotExist).
func (b *blobSpecIO) Unwrap() icebergio.IO { return b.FileIO }

func (b *blobSpecIO) Open(name string) (icebergio.File, error) {
	return openSpec(b.FileIO.Open, name)
}

func (b *blobSpecIO) ReadFile(name string) ([]byte, error) {
	return readSpec(b.FileIO.ReadFile, name)
}

// sniffBytes is how much of an .avro file openSpec reads to tell what it
// is: the object container's header holds the writer schema and the
// metadata, a few KiB for any manifest list or manifest, and the first
// records follow it.
const sniffBytes = 64 << 10

// openSpec opens name. An Avro file specAvro may change (a manifest list,
// a manifest DuckDB wrote) is read into memory and served in
// its form; any other file is served from the file itself, its first
// bytes from what was read to tell.
func openSpec(open func(string) (icebergio.File, error), name string) (icebergio.File, error) {
	f, err := open(name)
	if err != nil || !strings.HasSuffix(name, ".avro") {
		return f, err
	}
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		_ = f.Close()
		return nil, err
	}
	head = head[:n]
	if !mayChange(head) {
		return &prefixFile{File: f, prefix: head}, nil
	}
	defer f.Close()
	rest, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	data, err := specAvro(append(head, rest...))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return &memFile{Reader: bytes.NewReader(data), info: memInfo{name: st.Name(), size: int64(len(data)), mod: st.ModTime()}}, nil
}

func readSpec(read func(string) ([]byte, error), name string) ([]byte, error) {
	b, err := read(name)
	if err != nil || !strings.HasSuffix(name, ".avro") || !mayChange(b) {
		return b, err
	}
	data, err := specAvro(b)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return data, nil
}

// Byte patterns of an Avro object container (strings are a zigzag length
// then the bytes): the magic, a manifest list's and a manifest's record
// names, the header entries content=data and avro.codec (absent: null),
// and the
// Avro strings "parquet", "avro" and "orc".
var (
	avroMagic        = []byte("Obj\x01")
	manifestListName = []byte(`"manifest_file"`)
	manifestName     = []byte(`"manifest_entry"`)
	contentData      = []byte("\x0econtent\x08data")
	codecKey         = []byte("\x14avro.codec")
	codecNull        = []byte("\x14avro.codec\x08null")
	lowerFormats     = [][]byte{[]byte("\x0eparquet"), []byte("\x08avro"), []byte("\x06orc")}
)

// mayChange reports whether head, the first bytes of a file, is the start
// of an Avro file specAvro may change: a manifest list; a manifest with a
// file format in lower case, or labelled content=data whose first entry
// is a delete file. A compressed manifest is not looked into: DuckDB
// writes none, Java, pyiceberg and iceberg-go compress theirs.
func mayChange(head []byte) bool {
	if !bytes.HasPrefix(head, avroMagic) {
		return false
	}
	if bytes.Contains(head, manifestListName) {
		return true
	}
	if !bytes.Contains(head, manifestName) || (bytes.Contains(head, codecKey) && !bytes.Contains(head, codecNull)) {
		return false
	}
	for _, f := range lowerFormats {
		if bytes.Contains(head, f) {
			return true
		}
	}
	if !bytes.Contains(head, contentData) {
		return false
	}
	// The first entry is in head unless it is huge: then "not a delete".
	rd, err := ocf.NewReader(bytes.NewReader(head))
	if err != nil {
		return false
	}
	defer rd.Close()
	var e map[string]any
	return rd.Decode(&e) == nil && fileContent(e) != 0
}

// fileContent is the content of a decoded manifest entry's file: 0 data,
// 1 position deletes, 2 equality deletes.
func fileContent(entry map[string]any) int32 {
	df, _ := entry["data_file"].(map[string]any)
	c, _ := df["content"].(int32)
	return c
}

// specAvro is data, an Avro object container, in the form iceberg-go
// reads: narrowManifestList's for a manifest list, specManifest's for a
// manifest; data itself when nothing needs
// to change.
func specAvro(data []byte) ([]byte, error) {
	var (
		out     []byte
		changed bool
		err     error
	)
	if bytes.Contains(data[:min(len(data), sniffBytes)], manifestListName) {
		out, changed, err = narrowManifestList(bytes.NewReader(data))
	} else {
		out, changed, err = specManifest(data)
	}
	if err != nil || !changed {
		return data, err
	}
	return out, nil
}

// specManifest returns the manifest data with the header's content
// "deletes" when it says "data" and every entry is a delete file, and
// every entry's file_format in upper case; changed is false when nothing
// needed to change.
//
// Errors: a manifest labelled data mixing data and delete files, or
// unreadable.
func specManifest(data []byte) (out []byte, changed bool, err error) {
	rd, err := ocf.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, false, nil
	}
	defer rd.Close()
	meta := rd.Metadata()
	var recs []any
	var deletes int
	for {
		var rec map[string]any
		if err := rd.Decode(&rec); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, false, err
		}
		if fileContent(rec) != 0 {
			deletes++
		}
		if df, _ := rec["data_file"].(map[string]any); df != nil {
			if f, ok := df["file_format"].(string); ok && f != strings.ToUpper(f) {
				df["file_format"] = strings.ToUpper(f)
				changed = true
			}
		}
		recs = append(recs, rec)
	}
	keep := map[string][]byte{}
	for k, v := range meta {
		if !strings.HasPrefix(k, "avro.") {
			keep[k] = v
		}
	}
	if string(meta["content"]) == "data" && deletes > 0 {
		if deletes != len(recs) {
			return nil, false, fmt.Errorf("manifest labelled content=data holds %d delete files among %d entries", deletes, len(recs))
		}
		keep["content"] = []byte("deletes")
		changed = true
	}
	if !changed {
		return nil, false, nil
	}
	return encodeAvro(rd.Schema(), keep, recs)
}

// encodeAvro writes recs as an object container with schema sch and
// metadata meta, without a codec.
func encodeAvro(sch *avro.Schema, meta map[string][]byte, recs []any) ([]byte, bool, error) {
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, sch, ocf.WithMetadata(meta))
	if err != nil {
		return nil, false, err
	}
	for n, rec := range recs {
		if err := w.Encode(rec); err != nil {
			return nil, false, fmt.Errorf("record %d: %w", n, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, false, err
	}
	return buf.Bytes(), true, nil
}

// prefixFile is a file whose first bytes (prefix) were read already: Read
// serves them, then continues in the file; Seek and ReadAt go to the file
// itself.
type prefixFile struct {
	icebergio.File
	prefix []byte
	off    int // position in prefix; len(prefix) once past it or after a Seek
}

func (p *prefixFile) Read(b []byte) (int, error) {
	if p.off < len(p.prefix) {
		n := copy(b, p.prefix[p.off:])
		p.off += n
		return n, nil
	}
	return p.File.Read(b)
}

func (p *prefixFile) Seek(offset int64, whence int) (int64, error) {
	if whence == io.SeekCurrent {
		// The file itself is at len(prefix), the reader at off.
		offset -= int64(len(p.prefix) - p.off)
	}
	p.off = len(p.prefix)
	return p.File.Seek(offset, whence)
}

// requiredManifestListFields are the field ids of a v2 or v3 manifest
// list's manifest_file record that the spec requires: manifest_path,
// manifest_length, partition_spec_id, content, sequence_number,
// min_sequence_number, added_snapshot_id and the six file and row counts.
// (v1 lists leave the counts optional; narrowManifestList leaves v1 lists
// alone: iceberg-go's v1 reader takes the optional fields as optional.)
var requiredManifestListFields = map[int]bool{
	500: true, 501: true, 502: true, 517: true, 515: true, 516: true, 503: true,
	504: true, 505: true, 506: true, 512: true, 513: true, 514: true,
}

const (
	fieldPartitions   = 507 // partitions: optional list<field_summary>, element id 508
	fieldContainsNull = 509 // field_summary.contains_null: required
	fieldSequence     = 515 // sequence_number: present from v2 on
	// summaryRecord is the name of the field_summary record: "r" and the
	// element's field id, as Java and iceberg-go write it.
	summaryRecord = "r508"
)

// errNotManifestList: the Avro file is something else (a manifest, a data
// file), served unchanged.
var errNotManifestList = errors.New("not a v2+ manifest list")

// narrowManifestList reads the Avro object container in r and, if it is a
// v2 or v3 manifest list (root record manifest_file with a
// sequence_number field) whose writer schema makes a required field
// optional or names the field summary record otherwise than r508, returns
// it re-encoded with those fields required and that name: the same
// records, the same metadata, no codec. changed is false (and data nil)
// for any other file, which the caller serves as it is.
//
// Errors: a record with null in a required field; an unreadable file.
func narrowManifestList(r io.Reader) (data []byte, changed bool, err error) {
	rd, err := ocf.NewReader(r)
	if err != nil {
		// Not an object container (or a damaged one): iceberg-go's reader
		// reports it in its own words.
		return nil, false, nil
	}
	defer rd.Close()
	meta := rd.Metadata()
	narrowed, err := narrowSchema(meta["avro.schema"])
	if errors.Is(err, errNotManifestList) || (err == nil && narrowed == nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	sch, err := avro.Parse(string(narrowed))
	if err != nil {
		return nil, false, fmt.Errorf("narrowed schema: %w", err)
	}
	keep := map[string][]byte{}
	for k, v := range meta {
		if !strings.HasPrefix(k, "avro.") {
			keep[k] = v
		}
	}
	var recs []any
	for {
		var rec any
		if err := rd.Decode(&rec); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, false, err
		}
		recs = append(recs, rec)
	}
	out, changed, err := encodeAvro(sch, keep, recs)
	if err != nil {
		return nil, false, fmt.Errorf("a field the spec requires is null: %w", err)
	}
	return out, changed, nil
}

// narrowSchema returns the manifest-list schema JSON raw with every
// required field (requiredManifestListFields, the partition summaries'
// elements and contains_null) made non-optional, or nil when none was
// optional. errNotManifestList for any other schema.
func narrowSchema(raw []byte) ([]byte, error) {
	var root map[string]any
	if json.Unmarshal(raw, &root) != nil || root["type"] != "record" {
		return nil, errNotManifestList
	}
	name, _ := root["name"].(string)
	if name != "manifest_file" && !strings.HasSuffix(name, ".manifest_file") {
		return nil, errNotManifestList
	}
	fields, _ := root["fields"].([]any)
	v2 := false
	for _, f := range fields {
		if fieldID(f) == fieldSequence {
			v2 = true
		}
	}
	if !v2 {
		return nil, errNotManifestList
	}
	changed := false
	for _, f := range fields {
		fm, _ := f.(map[string]any)
		switch id := fieldID(f); {
		case requiredManifestListFields[id]:
			changed = unwrapNull(fm, "type") || changed
		case id == fieldPartitions:
			// partitions stays optional; its elements and their
			// contains_null are required.
			list, _ := nonNull(fm["type"]).(map[string]any)
			if list == nil || list["type"] != "array" {
				continue
			}
			changed = unwrapNull(list, "items") || changed
			summary, _ := list["items"].(map[string]any)
			if summary != nil && summary["name"] != summaryRecord {
				// Avro resolves records by name: iceberg-go's reader
				// takes the spec's r508 (Java's name for the record of
				// field 508), DuckDB writes element0.
				summary["name"] = summaryRecord
				changed = true
			}
			sfields, _ := summary["fields"].([]any)
			for _, sf := range sfields {
				if fieldID(sf) == fieldContainsNull {
					changed = unwrapNull(sf.(map[string]any), "type") || changed
				}
			}
		}
	}
	if !changed {
		return nil, nil
	}
	return json.Marshal(root)
}

// fieldID is the field-id attribute of an Avro record field, or -1.
func fieldID(f any) int {
	fm, _ := f.(map[string]any)
	if v, ok := fm["field-id"].(float64); ok {
		return int(v)
	}
	return -1
}

// unwrapNull replaces m[key], when it is a union of null and one type,
// by that type, and reports whether it did.
func unwrapNull(m map[string]any, key string) bool {
	if m == nil {
		return false
	}
	u, ok := m[key].([]any)
	if !ok || len(u) != 2 {
		return false
	}
	t := nonNull(u)
	if t == nil {
		return false
	}
	m[key] = t
	return true
}

// nonNull returns t itself when it is not a union, the non-null branch of
// a union of null and one type, or nil.
func nonNull(t any) any {
	u, ok := t.([]any)
	if !ok {
		return t
	}
	if len(u) != 2 {
		return nil
	}
	switch {
	case isNull(u[0]) && !isNull(u[1]):
		return u[1]
	case isNull(u[1]) && !isNull(u[0]):
		return u[0]
	}
	return nil
}

// isNull reports the Avro null type, spelled "null" or {"type": "null"}
// (DuckDB's Avro writer has written both).
func isNull(t any) bool {
	if t == "null" {
		return true
	}
	m, ok := t.(map[string]any)
	return ok && m["type"] == "null" && len(m) == 1
}

// memFile is an icebergio.File over bytes in memory.
type memFile struct {
	*bytes.Reader
	info memInfo
}

func (m *memFile) Stat() (fs.FileInfo, error) { return m.info, nil }
func (m *memFile) Close() error               { return nil }

type memInfo struct {
	name string
	size int64
	mod  time.Time
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
