package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/publish"
)

// Publisher is what the management API needs of the catalog publisher
// (*publish.Publisher).
type Publisher interface {
	Status() publish.Status
	Resume(ctx context.Context, target string, id catalog.Ident) (publish.Status, error)
	Sync(ctx context.Context, target string, id catalog.Ident) (publish.Status, error)
}

var _ Publisher = (*publish.Publisher)(nil)

// errPublishNotConfigured: serve runs without publish targets.
var errPublishNotConfigured = errors.New("publishing not configured (no --publish targets)")

// PublishRequest is the body of POST /management/v1/publish/resume and
// /management/v1/publish/sync.
type PublishRequest struct {
	// Table is namespace.name, or {"namespace": [...], "name": "..."}
	// when a level or the name holds a dot (catalog.TableName).
	Table catalog.TableName `json:"table"`
	// Target names one target; empty: every target.
	Target string `json:"target,omitempty"`
}

// publishRoutes registers GET /publish (targets, tables, state), POST
// /publish/resume (restart a table stopped by a conflict, taking the
// target's table over) and POST /publish/sync (publish a table now)
// under g.
func (s *Server) publishRoutes(g *echo.Group) {
	g.GET("/publish", s.publishStatus)
	g.POST("/publish/resume", s.publishAction(Publisher.Resume))
	g.POST("/publish/sync", s.publishAction(Publisher.Sync))
}

func (s *Server) publisher() (Publisher, error) {
	if s.cfg.Publish == nil {
		return nil, echo.NewHTTPError(http.StatusServiceUnavailable, errPublishNotConfigured.Error())
	}
	return s.cfg.Publish, nil
}

func (s *Server) publishStatus(c echo.Context) error {
	p, err := s.publisher()
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p.Status())
}

// publishAction answers the status after the action: 400 for a
// malformed table name, 404 for a missing table or target, 409 when the
// table is stopped by a conflict (sync) or the target refuses Tarn's
// pointer again, 500 for a target that fails (it is retried).
func (s *Server) publishAction(act func(Publisher, context.Context, string, catalog.Ident) (publish.Status, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := s.publisher()
		if err != nil {
			return err
		}
		req, err := requestBody[PublishRequest](c)
		if err != nil {
			return err
		}
		id, err := ParseTableName(req.Table)
		if err != nil {
			return err
		}
		st, err := act(p, c.Request().Context(), req.Target, id)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, st)
	}
}
