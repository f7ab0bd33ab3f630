package spec

import (
	"encoding/json"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/view"
)

// CreateViewRequest is the body of POST /v1/{prefix}/namespaces/{namespace}/views.
type CreateViewRequest struct {
	Name        string            `json:"name"`
	Location    string            `json:"location,omitempty"`
	Schema      *iceberg.Schema   `json:"schema"`
	ViewVersion *view.Version     `json:"view-version"`
	Properties  map[string]string `json:"properties"`
}

// LoadViewResult is the body of a view load, create or replace response.
type LoadViewResult struct {
	MetadataLocation string            `json:"metadata-location"`
	Metadata         json.RawMessage   `json:"metadata"`
	Config           map[string]string `json:"config,omitempty"`
}

// CommitViewRequest is the body of POST .../views/{view}.
type CommitViewRequest struct {
	Identifier   *TableIdentifier  `json:"identifier,omitempty"`
	Requirements view.Requirements `json:"requirements"`
	Updates      view.Updates      `json:"updates"`
}

// RegisterViewRequest is the body of POST .../namespaces/{namespace}/register-view.
type RegisterViewRequest struct {
	Name             string `json:"name"`
	MetadataLocation string `json:"metadata-location"`
}
