package spec

import (
	"encoding/json"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TableIdentifier names a table or a view: its namespace levels and its name.
type TableIdentifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

// ListTablesResponse is the body of GET .../tables and GET .../views.
type ListTablesResponse struct {
	NextPageToken *string           `json:"next-page-token,omitempty"`
	Identifiers   []TableIdentifier `json:"identifiers"`
}

// CreateTableRequest is the body of POST /v1/{prefix}/namespaces/{namespace}/tables.
// PartitionSpec and WriteOrder are unbound: their source IDs name fields of
// Schema under whatever numbering the client chose (Spark numbers a new
// table's columns from 0), so they are resolved through Schema when the
// table is created, not checked as table field IDs on decode.
type CreateTableRequest struct {
	Name          string                        `json:"name"`
	Location      string                        `json:"location,omitempty"`
	Schema        *iceberg.Schema               `json:"schema"`
	PartitionSpec *iceberg.UnboundPartitionSpec `json:"partition-spec,omitempty"`
	WriteOrder    *table.UnboundSortOrder       `json:"write-order,omitempty"`
	StageCreate   bool                          `json:"stage-create,omitempty"`
	Properties    map[string]string             `json:"properties,omitempty"`
}

// LoadTableResult is the body of a table load, create or commit response.
// Metadata is kept as raw JSON so that the server can send what it stored
// (snapshots filtered by the `snapshots` query parameter).
type LoadTableResult struct {
	// MetadataLocation is nil for a staged create, whose metadata is not written.
	MetadataLocation *string           `json:"metadata-location,omitempty"`
	Metadata         json.RawMessage   `json:"metadata"`
	Config           map[string]string `json:"config,omitempty"`
	// StorageCredentials are vended credentials (X-Iceberg-Access-Delegation).
	StorageCredentials []StorageCredential `json:"storage-credentials,omitempty"`
}

// CommitTableRequest is the body of POST .../tables/{table} and one entry of
// a transaction.
type CommitTableRequest struct {
	Identifier   *TableIdentifier   `json:"identifier,omitempty"`
	Requirements table.Requirements `json:"requirements"`
	Updates      table.Updates      `json:"updates"`
}

// CommitTableResponse answers CommitTableRequest.
type CommitTableResponse struct {
	MetadataLocation string          `json:"metadata-location"`
	Metadata         json.RawMessage `json:"metadata"`
}

// CommitTransactionRequest is the body of POST /v1/{prefix}/transactions/commit.
type CommitTransactionRequest struct {
	TableChanges []CommitTableRequest `json:"table-changes"`
}

// RegisterTableRequest is the body of POST .../namespaces/{namespace}/register.
type RegisterTableRequest struct {
	Name             string `json:"name"`
	MetadataLocation string `json:"metadata-location"`
	Overwrite        bool   `json:"overwrite,omitempty"`
}

// RenameTableRequest is the body of POST /v1/{prefix}/tables/rename and
// /v1/{prefix}/views/rename.
type RenameTableRequest struct {
	Source      *TableIdentifier `json:"source"`
	Destination *TableIdentifier `json:"destination"`
}

// ReportMetricsRequest is the body of POST .../tables/{table}/metrics; Tarn
// reads only its kind.
type ReportMetricsRequest struct {
	ReportType string `json:"report-type"`
	TableName  string `json:"table-name"`
}
