package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/spec"
)

func (s *Server) listViews(c echo.Context) error {
	return s.listTabulars(c, s.cat.ListViews)
}

func sendView(c echo.Context, v *catalog.Loaded) error {
	return c.JSON(http.StatusOK, spec.LoadViewResult{MetadataLocation: v.MetadataLocation, Metadata: v.MetadataJSON, Config: map[string]string{}})
}

func (s *Server) createView(c echo.Context) error {
	return makeIn(s, c, s.cat.CreateView, sendView)
}

func (s *Server) loadView(c echo.Context) error {
	wh, err := s.warehouse(c)
	if err != nil {
		return err
	}
	id, err := identParam(c, "view")
	if err != nil {
		return err
	}
	v, err := s.cat.LoadView(c.Request().Context(), wh, id)
	if err != nil {
		return err
	}
	return sendView(c, v)
}

func (s *Server) viewExists(c echo.Context) error {
	return s.exists(c, "view", s.cat.ViewExists)
}

func (s *Server) replaceView(c echo.Context) error {
	wh, err := s.warehouse(c)
	if err != nil {
		return err
	}
	id, err := identParam(c, "view")
	if err != nil {
		return err
	}
	req, err := requestBody[spec.CommitViewRequest](c)
	if err != nil {
		return err
	}
	if err := checkBodyIdent(id, req.Identifier); err != nil {
		return err
	}
	v, err := s.cat.ReplaceView(c.Request().Context(), wh, id, req.Requirements, req.Updates)
	if err != nil {
		return err
	}
	return sendView(c, v)
}

func (s *Server) dropView(c echo.Context) error {
	if _, err := s.warehouse(c); err != nil {
		return err
	}
	id, err := identParam(c, "view")
	if err != nil {
		return err
	}
	if err := s.cat.DropView(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) renameView(c echo.Context) error {
	wh, err := s.warehouse(c)
	if err != nil {
		return err
	}
	from, to, err := renameRequest(c)
	if err != nil {
		return err
	}
	if err := s.cat.RenameView(c.Request().Context(), wh, from, to); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) registerView(c echo.Context) error {
	return makeIn(s, c, s.cat.RegisterView, sendView)
}
