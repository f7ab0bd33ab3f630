package delta

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
)

// The actions of a Delta commit file, as PROTOCOL.md "Actions" defines
// them (https://github.com/delta-io/delta/blob/master/PROTOCOL.md#actions).
// Only the fields Tarn writes or needs to read back are declared; a
// reader ignores the rest, as the protocol requires of unknown fields.

// Protocol is the protocol action: the reader and writer versions and,
// at reader 3 / writer 7, the table features.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
}

// Format is the metaData action's format ("parquet", no options).
type Format struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

// Metadata is the metaData action. SchemaString holds the Delta schema
// as JSON (PROTOCOL.md "Schema Serialization Format").
type Metadata struct {
	ID               string            `json:"id"`
	Name             string            `json:"name,omitempty"`
	Description      string            `json:"description,omitempty"`
	Format           Format            `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	CreatedTime      *int64            `json:"createdTime,omitempty"`
	Configuration    map[string]string `json:"configuration"`
}

// DeletionVector is the DeletionVectorDescriptor of an add or remove
// (PROTOCOL.md "Deletion Vectors"). Tarn writes none yet; the type is
// here so that a logical file is keyed by (path, DV) from the start and
// upsert tables can add DVs without changing the log's model.
type DeletionVector struct {
	StorageType    string `json:"storageType"`
	PathOrInlineDV string `json:"pathOrInlineDv"`
	Offset         *int32 `json:"offset,omitempty"`
	SizeInBytes    int32  `json:"sizeInBytes"`
	Cardinality    int64  `json:"cardinality"`
}

// UniqueID is the DV's uniqueId (PROTOCOL.md "Derived Fields"); "" for
// no DV.
func (dv *DeletionVector) UniqueID() string {
	if dv == nil {
		return ""
	}
	if dv.Offset == nil {
		return dv.StorageType + dv.PathOrInlineDV
	}
	return fmt.Sprintf("%s%s@%d", dv.StorageType, dv.PathOrInlineDV, *dv.Offset)
}

// Add is the add action: one logical file (a data file and its DV).
// Path is a URI relative to the table root or absolute.
type Add struct {
	Path             string            `json:"path"`
	PartitionValues  map[string]string `json:"partitionValues"`
	Size             int64             `json:"size"`
	ModificationTime int64             `json:"modificationTime"`
	DataChange       bool              `json:"dataChange"`
	Stats            string            `json:"stats,omitempty"`
	Tags             map[string]string `json:"tags,omitempty"`
	DeletionVector   *DeletionVector   `json:"deletionVector,omitempty"`
}

// Remove is the remove action: a tombstone for a logical file.
type Remove struct {
	Path                 string            `json:"path"`
	DeletionTimestamp    int64             `json:"deletionTimestamp"`
	DataChange           bool              `json:"dataChange"`
	ExtendedFileMetadata bool              `json:"extendedFileMetadata,omitempty"`
	PartitionValues      map[string]string `json:"partitionValues,omitempty"`
	Size                 int64             `json:"size,omitempty"`
	DeletionVector       *DeletionVector   `json:"deletionVector,omitempty"`
}

// Txn is the transaction identifier (PROTOCOL.md "Transaction
// Identifiers"). Tarn's appId is the Iceberg table uuid and its version
// the sequence number of the Iceberg snapshot the Delta version reflects.
type Txn struct {
	AppID       string `json:"appId"`
	Version     int64  `json:"version"`
	LastUpdated int64  `json:"lastUpdated,omitempty"`
}

// CommitInfo is the commitInfo action (provenance; not kept in
// checkpoints). Tarn records the Iceberg snapshot a version reflects.
type CommitInfo struct {
	Timestamp           int64             `json:"timestamp"`
	Operation           string            `json:"operation"`
	OperationParameters map[string]string `json:"operationParameters"`
	EngineInfo          string            `json:"engineInfo,omitempty"`
	IsBlindAppend       bool              `json:"isBlindAppend"`
	// IcebergSnapshotID and IcebergSequenceNumber name the Iceberg
	// snapshot of main this version reflects (absent for an empty table).
	IcebergSnapshotID     *int64 `json:"tarnIcebergSnapshotId,omitempty"`
	IcebergSequenceNumber int64  `json:"tarnIcebergSequenceNumber"`
}

// Action is one line of a commit file: exactly one field set.
type Action struct {
	CommitInfo *CommitInfo `json:"commitInfo,omitempty"`
	Protocol   *Protocol   `json:"protocol,omitempty"`
	MetaData   *Metadata   `json:"metaData,omitempty"`
	Txn        *Txn        `json:"txn,omitempty"`
	Add        *Add        `json:"add,omitempty"`
	Remove     *Remove     `json:"remove,omitempty"`
}

// encodeCommit writes actions as newline-delimited JSON, one action a
// line (PROTOCOL.md "Delta Log Entries").
func encodeCommit(actions []Action) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, a := range actions {
		if err := enc.Encode(a); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// decodeCommit parses a commit file; blank lines are skipped and actions
// Tarn does not know (cdc, domainMetadata, ...) come back empty.
// Errors: a line that is not a JSON object.
func decodeCommit(b []byte) ([]Action, error) {
	var out []Action
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 256<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var a Action
		if err := json.Unmarshal(line, &a); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// fileKey is a logical file's primary key: its path and DV unique id
// (PROTOCOL.md "Action Reconciliation").
type fileKey struct {
	path string
	dv   string
}
