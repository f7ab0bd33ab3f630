package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"
)

// DetectFormat is the format FormatAuto resolves to for topic: that of
// the latest schema of its value subject (ValueSubject), as WriterSchema
// resolves it at enable. Errors: ErrNoSchema (wrapped) when the subject
// has no schema; codec.ErrUnsupported (wrapped) for a schema type Tarn
// does not read; the registry's error otherwise.
func DetectFormat(ctx context.Context, reg Registry, topic string) (Format, error) {
	subject := ValueSubject(topic)
	ss, err := reg.SchemaByVersion(ctx, subject, -1)
	var re *sr.ResponseError
	switch {
	case errors.As(err, &re) && re.StatusCode == 404:
		return "", fmt.Errorf("%w: subject %s has no schema", ErrNoSchema, subject)
	case err != nil:
		return "", fmt.Errorf("schema registry: subject %s: %w", subject, err)
	}
	f, err := formatOf(ss.Type)
	if err != nil {
		return "", fmt.Errorf("subject %s: %w", subject, err)
	}
	return f, nil
}
