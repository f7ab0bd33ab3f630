// Package spec holds the wire types of the Apache Iceberg REST Catalog API
// that Tarn serves, and the exception kinds of its ErrorModel.
//
// The pinned OpenAPI document is rest-catalog-open-api.yaml in this folder
// (Apache Iceberg 1.11.0, https://github.com/apache/iceberg/blob/main/open-api/rest-catalog-open-api.yaml).
// Table and view metadata, requirements and updates are iceberg-go's own
// types (table.Metadata, table.Requirements, table.Updates, view.Metadata,
// view.Requirements, view.Updates), so their JSON forms are decoded exactly as
// iceberg-go's REST client encodes them.
package spec

// Version is the release of the Iceberg REST OpenAPI document Tarn pins.
const Version = "1.11.0"
