package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/apache/iceberg-go/table"
	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/pipeline"
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

// DeadLettersResponse is the body of GET
// /management/v1/topics/{topic}/dead-letters.
type DeadLettersResponse struct {
	// Table is the dead letter table (pipeline.DLQTable).
	Table string `json:"table"`
	// Records are its newest records, newest first
	// (pipeline.RecentDeadLetters); empty when the table does not exist
	// yet (no bad record since the topic went to error mode dlq).
	Records []pipeline.DeadLetter `json:"records"`
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
	ctx := c.Request().Context()
	st, err := m.Get(ctx, name)
	if err != nil {
		return err
	}
	if st.Config.ErrorMode != "dlq" {
		return fmt.Errorf("%w: topic %s has error mode %s, not dlq: it has no dead letter table", errBadRequest, name, st.Config.ErrorMode)
	}
	id, err := topics.ParseTable(st.Table)
	if err != nil {
		return err
	}
	dlq := pipeline.DLQTable(id)
	resp := DeadLettersResponse{Table: catalog.FormatIdent(dlq), Records: []pipeline.DeadLetter{}}
	wh, err := s.cat.TableWarehouse(ctx, dlq)
	var tbl *table.Table
	if err == nil {
		tbl, err = s.cat.TableIO(wh).LoadTable(ctx, append(append(table.Identifier{}, dlq.Namespace...), dlq.Name))
	}
	if errors.Is(err, catalog.ErrNoSuchTable) {
		// Created with the first bad record in error mode dlq.
		return c.JSON(http.StatusOK, resp)
	}
	if err != nil {
		return err
	}
	if resp.Records, err = pipeline.RecentDeadLetters(ctx, tbl, limit); err != nil {
		return err
	}
	if resp.Records == nil {
		resp.Records = []pipeline.DeadLetter{}
	}
	return c.JSON(http.StatusOK, resp)
}
