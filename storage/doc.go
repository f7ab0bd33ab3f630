// Package storage is where a warehouse's files live and how Tarn and
// engines reach them: iceberg-go's FileIO for file:// and s3:// (durable
// writes, metadata files never overwritten), the one normal form
// locations are compared in, S3 credential vending through STS and SigV4
// signing of engines' S3 requests.
//
// Package catalog builds its warehouses on it (catalog.Warehouse) and
// decides which directories belong to a table; storage never imports
// catalog. iceberg-go keeps its storage in package io the same way.
//
// # Files
//
//   - s3.go: an S3 warehouse's properties (s3.*, STS, timeouts), the AWS
//     config and bounded HTTP client of every call, its FileIO and
//     conditional writes, and the classification of object-store failures
//   - vend.go: credentials vended through STS AssumeRole with an inline
//     session policy scoped to a table's directories (or the static keys)
//   - sign.go: SigV4 signing of a client's S3 request, refused unless it
//     stays inside the table's directories (S3 remote signing)
//   - file.go: durable file:// writes and directories (fsync)
//   - location.go: parsing a location, its normal form, containment, the
//     characters a table location may not hold
//   - errors.go: the error classes storage shares with catalog (internal/errclass)
package storage
