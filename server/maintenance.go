package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/maintenance"
)

// Maintainer is what the management API needs of maintenance's
// *Scheduler.
type Maintainer interface {
	Status() maintenance.Status
	RunJobs(ctx context.Context, id catalog.Ident, jobs []string) ([]maintenance.Result, error)
}

var _ Maintainer = (*maintenance.Scheduler)(nil)

// errMaintenanceNotConfigured: serve runs without a scheduler.
var errMaintenanceNotConfigured = errors.New("maintenance not configured")

// RunMaintenanceRequest is the body of POST /management/v1/maintenance/run.
type RunMaintenanceRequest struct {
	// Table is namespace.name, or {"namespace": [...], "name": "..."}
	// when a level or the name holds a dot (catalog.TableName).
	Table catalog.TableName `json:"table"`
	// Jobs to run, in maintenance.Jobs order when empty: all of them.
	Jobs []string `json:"jobs,omitempty"`
}

// RunMaintenanceResponse is its answer: one result per job run.
type RunMaintenanceResponse struct {
	Results []maintenance.Result `json:"results"`
}

// maintenanceRoutes registers GET /maintenance (the scheduler's status)
// and POST /maintenance/run (run jobs on one table now) under g.
func (s *Server) maintenanceRoutes(g *echo.Group) {
	g.GET("/maintenance", s.maintenanceStatus)
	g.POST("/maintenance/run", s.runMaintenance)
}

func (s *Server) maintainer() (Maintainer, error) {
	if s.cfg.Maintenance == nil {
		return nil, echo.NewHTTPError(http.StatusServiceUnavailable, errMaintenanceNotConfigured.Error())
	}
	return s.cfg.Maintenance, nil
}

func (s *Server) maintenanceStatus(c echo.Context) error {
	m, err := s.maintainer()
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, m.Status())
}

// runMaintenance runs the jobs synchronously and answers their results:
// 400 for an unknown job or a malformed table name, 404 for a missing
// table; a job that fails is a 500 whose message names it.
func (s *Server) runMaintenance(c echo.Context) error {
	m, err := s.maintainer()
	if err != nil {
		return err
	}
	req, err := requestBody[RunMaintenanceRequest](c)
	if err != nil {
		return err
	}
	id, err := ParseTableName(req.Table)
	if err != nil {
		return err
	}
	rs, err := m.RunJobs(c.Request().Context(), id, req.Jobs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, RunMaintenanceResponse{Results: rs})
}

// ParseTableName reads a maintenance request's table with
// catalog.ParseIdent. Errors wrap catalog.ErrInvalidArgument.
func ParseTableName(t catalog.TableName) (catalog.Ident, error) { return catalog.ParseIdent(string(t)) }
