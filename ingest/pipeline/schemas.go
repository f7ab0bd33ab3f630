package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/ingest/avro"
)

// Registry retries: a registry that is restarting or briefly unreachable
// should not fail the pipeline, one that stays down for several seconds
// should (the status then says why, and the caller restarts it later).
const (
	registryAttempts   = 5
	registryBackoffMin = 100 * time.Millisecond
	registryBackoffMax = 2 * time.Second
	// maxReferenceDepth bounds the walk through schema references, which a
	// broken registry could make cyclic.
	maxReferenceDepth = 32
)

// schemas resolves Confluent schema ids to decoders into the table's
// current schema. Verdicts are cached per id for the life of the cache:
// a schema id's text never changes, and neither does the table's schema
// while the cache is in use (it is rebuilt when the schema changes).
type schemas struct {
	reg    Registry
	target *iceberg.Schema
	byID   map[int]*resolved
}

// resolved is the verdict on one schema id: a decoder, or why records with
// the id cannot be materialized.
type resolved struct {
	dec  *avro.Decoder
	kind ErrorKind // set when dec is nil
	err  error
}

func newSchemas(reg Registry, target *iceberg.Schema) *schemas {
	return &schemas{reg: reg, target: target, byID: map[int]*resolved{}}
}

// transientError is a registry failure that says nothing about the
// schema: the lookup may succeed later, so it is not cached.
type transientError struct{ err error }

func (e *transientError) Error() string { return "schema registry: " + e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// get returns the verdict on id. A writer schema that maps to the table's
// current schema (the same fields, or fewer optional ones, or promotable
// types: what avro.NewDecoder accepts) gets a decoder into it; anything
// else is KindIncompatibleSchema, since evolving the table is not built
// yet. The error is a *transientError when the registry could not be
// asked (after retries) or ctx's error.
func (s *schemas) get(ctx context.Context, id int) (*resolved, error) {
	if r, ok := s.byID[id]; ok {
		return r, nil
	}
	r, err := s.resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	s.byID[id] = r
	return r, nil
}

func (s *schemas) resolve(ctx context.Context, id int) (*resolved, error) {
	var sch sr.Schema
	err := retry(ctx, func() (err error) {
		sch, err = s.reg.SchemaByID(ctx, id)
		return err
	})
	switch {
	case isSchemaNotFound(err):
		return &resolved{kind: KindUnknownSchema, err: fmt.Errorf("the registry has no schema with id %d", id)}, nil
	case err != nil:
		return nil, err
	case sch.Type != sr.TypeAvro:
		return &resolved{kind: KindUnsupportedSchema, err: fmt.Errorf("schema id %d is %s; only Avro values are materialized so far", id, sch.Type)}, nil
	}
	writer, err := s.parse(ctx, sch, &hamba.SchemaCache{}, 0)
	var te *transientError
	switch {
	case errors.As(err, &te) || ctx.Err() != nil:
		return nil, err
	case err != nil:
		return &resolved{kind: KindUnsupportedSchema, err: fmt.Errorf("schema id %d: %w", id, err)}, nil
	}
	dec, err := avro.NewDecoder(writer, s.target, avro.WithCallerColumns(KafkaColumn))
	switch {
	case errors.Is(err, avro.ErrIncompatible):
		return &resolved{kind: KindIncompatibleSchema, err: fmt.Errorf(
			"schema id %d does not fit the table's schema: %w (Tarn does not evolve table schemas yet)", id, err)}, nil
	case err != nil:
		return &resolved{kind: KindUnsupportedSchema, err: fmt.Errorf("schema id %d: %w", id, err)}, nil
	}
	return &resolved{dec: dec}, nil
}

// parse parses an Avro schema text after the schemas it references
// (Confluent schema references: named types defined in other subjects),
// all into one fresh cache so that named types of different schema ids
// never mix.
func (s *schemas) parse(ctx context.Context, sch sr.Schema, cache *hamba.SchemaCache, depth int) (hamba.Schema, error) {
	if depth > maxReferenceDepth {
		return nil, fmt.Errorf("schema references nested deeper than %d", maxReferenceDepth)
	}
	for _, ref := range sch.References {
		var ss sr.SubjectSchema
		err := retry(ctx, func() (err error) {
			ss, err = s.reg.SchemaByVersion(ctx, ref.Subject, ref.Version)
			return err
		})
		var re *sr.ResponseError
		switch {
		case errors.As(err, &re) && re.StatusCode == 404:
			return nil, fmt.Errorf("reference %s (subject %s version %d) not found", ref.Name, ref.Subject, ref.Version)
		case err != nil:
			// Says nothing about the schema (the registry is down, or
			// refuses us): fail rather than suspend on a good schema.
			var te *transientError
			if !errors.As(err, &te) {
				err = &transientError{err}
			}
			return nil, err
		case ss.Type != sr.TypeAvro:
			return nil, fmt.Errorf("reference %s is %s, not Avro", ref.Name, ss.Type)
		}
		if _, err := s.parse(ctx, ss.Schema, cache, depth+1); err != nil {
			return nil, fmt.Errorf("reference %s: %w", ref.Name, err)
		}
	}
	return hamba.ParseWithCache(sch.Schema, "", cache)
}

// isSchemaNotFound reports the registry's answer for an unknown schema id:
// error code 40403 (Confluent and Apicurio alike).
func isSchemaNotFound(err error) bool {
	var re *sr.ResponseError
	return errors.As(err, &re) && re.ErrorCode == sr.ErrSchemaNotFound.Code
}

// retry calls fn until it succeeds, fails with an answer from the registry
// that retrying cannot change (a 4xx other than 408 and 429), ctx ends, or
// registryAttempts calls failed; the last two return a *transientError.
func retry(ctx context.Context, fn func() error) error {
	backoff := registryBackoffMin
	for attempt := 1; ; attempt++ {
		err := fn()
		var re *sr.ResponseError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &re) && re.StatusCode >= 400 && re.StatusCode < 500 && re.StatusCode != 408 && re.StatusCode != 429:
			return err
		case ctx.Err() != nil:
			return &transientError{ctx.Err()}
		case attempt == registryAttempts:
			return &transientError{err}
		}
		select {
		case <-ctx.Done():
			return &transientError{ctx.Err()}
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, registryBackoffMax)
	}
}
