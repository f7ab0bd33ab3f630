package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
)

// Dead letters (GET /management/v1/topics/{topic}/dead-letters?limit=N).
const (
	// DefaultDeadLetters is how many records the route returns without
	// limit.
	DefaultDeadLetters = 20
	// MaxDeadLetters bounds limit: the route holds that many records in
	// memory while it scans the table.
	MaxDeadLetters = 200
)

// DeadLetterReader is what GET /management/v1/topics/{topic}/dead-letters
// needs of the topic manager (ingest/topics' *Manager).
type DeadLetterReader interface {
	DeadLetters(ctx context.Context, topic string, limit int) (catalog.Ident, []topics.DeadLetter, error)
}

var _ DeadLetterReader = (*topics.Manager)(nil)

// DeadLettersResponse is the body of GET
// /management/v1/topics/{topic}/dead-letters.
type DeadLettersResponse struct {
	// Table is the dead letter table.
	Table string `json:"table"`
	// Records are its newest records, newest first
	// (topics.Manager.DeadLetters); empty when the table does not exist
	// yet (no bad record since the topic went to error mode dlq).
	Records []topics.DeadLetter `json:"records"`
}

// topicDeadLetters returns the newest records of the topic's dead letter
// table, read through the catalog like any reader's scan. Authorized as
// the topic's other routes (manage on its table's namespace, which
// includes reading the dead letter table beside it). Errors: 400 for a
// limit outside 1..MaxDeadLetters or a topic whose error mode is not
// dlq; 404 for an unknown topic; 503 without ingest.
func (s *Server) topicDeadLetters(c echo.Context) error {
	m, name, err := s.topicParam(c)
	if err != nil {
		return err
	}
	limit := DefaultDeadLetters
	if v := c.QueryParam("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > MaxDeadLetters {
			return fmt.Errorf("%w: limit must be an integer from 1 to %d, got %q", errBadRequest, MaxDeadLetters, v)
		}
	}
	dr, ok := m.(DeadLetterReader)
	if !ok {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "this topic manager cannot read dead letters")
	}
	dlq, recs, err := dr.DeadLetters(c.Request().Context(), name, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, DeadLettersResponse{Table: catalog.FormatIdent(dlq), Records: recs})
}
