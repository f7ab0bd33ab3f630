package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/delta"
)

// FormatReporter is what GET /management/v1/tables/{table}/formats
// needs of the Delta publisher (*delta.Publisher).
type FormatReporter interface {
	Formats(ctx context.Context, id catalog.Ident) (delta.Formats, error)
}

var _ FormatReporter = (*delta.Publisher)(nil)

// errFormatsNotConfigured: serve runs without a Delta publisher.
var errFormatsNotConfigured = errors.New("table formats not configured")

// formatsRoutes registers GET /tables/{table}/formats under g.
func (s *Server) formatsRoutes(g *echo.Group) {
	g.GET("/tables/:table/formats", s.tableFormats)
}

// tableFormats answers a table's formats: its Iceberg head and its Delta
// log (location, version, the Iceberg snapshot it reflects, lag). The
// table is catalog.FormatIdent's text, as the maintenance API spells it
// (namespace.name, or the TableIdentifier JSON percent-encoded when a
// level or the name holds a dot): 400 for a malformed name, 404 for a
// missing table.
func (s *Server) tableFormats(c echo.Context) error {
	if s.cfg.Formats == nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, errFormatsNotConfigured.Error())
	}
	name, err := pathParam(c, "table")
	if err != nil {
		return err
	}
	id, err := ParseTableName(catalog.TableName(name))
	if err != nil {
		return err
	}
	f, err := s.cfg.Formats.Formats(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, f)
}
