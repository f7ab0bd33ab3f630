package topics

import (
	"errors"
	"fmt"

	"github.com/tarnhq/tarn/catalog"
)

// Sentinels. Each wraps the catalog sentinel of its HTTP class, so the
// server maps them like catalog errors; ErrNotSuspended, ErrUpstream and
// ErrNotConfigured have statuses of their own (server/topics.go).
var (
	// ErrInvalid: the request is invalid (400): a missing or malformed
	// field, a value out of range, a schema or partition spec that does not
	// apply.
	ErrInvalid = kind(catalog.ErrInvalidArgument, "invalid topic config")
	// ErrNoSuchTopic: no topic of that name is enabled in Tarn (404).
	ErrNoSuchTopic = kind(catalog.ErrNotFound, "topic is not enabled in Tarn")
	// ErrNoSuchKafkaTopic: Kafka has no topic of that name (404).
	ErrNoSuchKafkaTopic = kind(catalog.ErrNotFound, "Kafka topic does not exist")
	// ErrAlreadyEnabled: the topic has a record already (409).
	ErrAlreadyEnabled = kind(catalog.ErrAlreadyExists, "topic already enabled")
	// ErrTableTaken: the table exists and is not Tarn's for this topic, or
	// another topic materializes into it (409).
	ErrTableTaken = kind(catalog.ErrAlreadyExists, "table exists and is not Tarn's")
	// ErrDLQTaken: the topic's dead letter table name (<table>_dlq) holds
	// a table that is not the topic's own dead letter table (409).
	ErrDLQTaken = kind(catalog.ErrConflict, "dead letter table exists and is not the topic's")
	// ErrNotSuspended: resume of a topic that is not suspended (409).
	ErrNotSuspended = kind(catalog.ErrConflict, "topic is not suspended")
	// ErrUpstream: Kafka or the schema registry failed (502).
	ErrUpstream = errors.New("upstream service failed")
	// ErrNotConfigured: the manager has no Kafka connection (503).
	ErrNotConfigured = errors.New("ingest not configured: start tarn serve with --kafka-brokers")
	// ErrClosed: the manager is closed.
	ErrClosed = errors.New("topic manager closed")
)

type sentinel struct {
	msg    string
	parent error
}

func kind(parent error, msg string) error { return &sentinel{msg: msg, parent: parent} }

func (s *sentinel) Error() string { return s.msg }
func (s *sentinel) Unwrap() error { return s.parent }

// msgError is an error with its own message that matches a sentinel.
type msgError struct {
	msg      string
	sentinel error
}

func (e *msgError) Error() string { return e.msg }
func (e *msgError) Unwrap() error { return e.sentinel }

// errorf returns an error with a formatted message that matches sentinel.
func errorf(sentinel error, format string, args ...any) error {
	return &msgError{msg: fmt.Sprintf(format, args...), sentinel: sentinel}
}
