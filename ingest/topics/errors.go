package topics

import (
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/errclass"
)

// Sentinels. Each wraps its error class (the catalog's name for it where
// catalog has one), so the server maps them like catalog errors;
// ErrDLQTaken and ErrNotSuspended are sent as ConflictException, a finer
// exception than their class's (server/errors.go).
var (
	// ErrInvalid: the request is invalid (400): a missing or malformed
	// field, a value out of range, a schema or partition spec that does not
	// apply.
	ErrInvalid = errclass.New(catalog.ErrInvalidArgument, "invalid topic config")
	// ErrNoSuchTopic: no topic of that name is enabled in Tarn (404).
	ErrNoSuchTopic = errclass.New(catalog.ErrNotFound, "topic is not enabled in Tarn")
	// ErrNoSuchKafkaTopic: Kafka has no topic of that name (404).
	ErrNoSuchKafkaTopic = errclass.New(catalog.ErrNotFound, "Kafka topic does not exist")
	// ErrAlreadyEnabled: the topic has a record already (409).
	ErrAlreadyEnabled = errclass.New(catalog.ErrAlreadyExists, "topic already enabled")
	// ErrTableTaken: the table exists and is not Tarn's for this topic, or
	// another topic materializes into it (409).
	ErrTableTaken = errclass.New(catalog.ErrAlreadyExists, "table exists and is not Tarn's")
	// ErrDLQTaken: the topic's dead letter table name (<table>_dlq) holds
	// a table that is not the topic's own dead letter table (409).
	ErrDLQTaken = errclass.New(catalog.ErrConflict, "dead letter table exists and is not the topic's")
	// ErrNotSuspended: resume of a topic that is not suspended (409).
	ErrNotSuspended = errclass.New(catalog.ErrConflict, "topic is not suspended")
	// ErrUpstream: Kafka or the schema registry failed (502).
	ErrUpstream = errclass.New(errclass.Upstream, "upstream service failed")
	// ErrNotConfigured: the manager has no Kafka connection (503).
	ErrNotConfigured = errclass.New(errclass.Unavailable, "ingest not configured: start tarn serve with --kafka-brokers")
	// ErrClosed: the manager is closed.
	ErrClosed = errclass.New(errclass.Unavailable, "topic manager closed")
)
