package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/spec"
)

func (s *Server) listNamespaces(c echo.Context) error {
	if _, err := s.warehouse(c); err != nil {
		return err
	}
	var parent catalog.Namespace
	if p := c.QueryParam("parent"); p != "" {
		parent = strings.Split(p, namespaceSeparator)
	}
	page, err := pageParams(c)
	if err != nil {
		return err
	}
	if err := s.visibleOnly(c, &page, func(ns []string, _ string) auth.Securable { return auth.Namespace(ns) }); err != nil {
		return err
	}
	list, next, err := s.cat.ListNamespaces(c.Request().Context(), parent, page)
	if err != nil {
		return err
	}
	out := spec.ListNamespacesResponse{Namespaces: make([][]string, 0, len(list)), NextPageToken: nextToken(next)}
	for _, ns := range list {
		out.Namespaces = append(out.Namespaces, ns)
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) createNamespace(c echo.Context) error {
	if _, err := s.warehouse(c); err != nil {
		return err
	}
	req, err := requestBody[spec.CreateNamespaceRequest](c)
	if err != nil {
		return err
	}
	if req.Properties == nil {
		req.Properties = map[string]string{}
	}
	if err := s.cat.CreateNamespace(c.Request().Context(), req.Namespace, req.Properties); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, spec.CreateNamespaceResponse{Namespace: req.Namespace, Properties: req.Properties})
}

func (s *Server) loadNamespace(c echo.Context) error {
	if _, err := s.warehouse(c); err != nil {
		return err
	}
	ns, err := namespaceParam(c)
	if err != nil {
		return err
	}
	props, err := s.cat.LoadNamespace(c.Request().Context(), ns)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, spec.GetNamespaceResponse{Namespace: ns, Properties: props})
}

func (s *Server) namespaceExists(c echo.Context) error {
	if _, err := s.warehouse(c); err != nil {
		return err
	}
	ns, err := namespaceParam(c)
	if err != nil {
		return err
	}
	_, err = s.cat.LoadNamespace(c.Request().Context(), ns)
	if errors.Is(err, catalog.ErrNoSuchNamespace) {
		return c.NoContent(http.StatusNotFound)
	} else if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) dropNamespace(c echo.Context) error {
	if _, err := s.warehouse(c); err != nil {
		return err
	}
	ns, err := namespaceParam(c)
	if err != nil {
		return err
	}
	if err := s.cat.DropNamespace(c.Request().Context(), ns); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) updateNamespaceProperties(c echo.Context) error {
	if _, err := s.warehouse(c); err != nil {
		return err
	}
	ns, err := namespaceParam(c)
	if err != nil {
		return err
	}
	req, err := requestBody[spec.UpdateNamespacePropertiesRequest](c)
	if err != nil {
		return err
	}
	updated, removed, missing, err := s.cat.UpdateNamespaceProperties(c.Request().Context(), ns, req.Removals, req.Updates)
	if err != nil {
		return err
	}
	orEmpty := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	// Empty lists, not null: pyiceberg (0.12) refuses a null "missing".
	return c.JSON(http.StatusOK, spec.UpdateNamespacePropertiesResponse{Updated: orEmpty(updated), Removed: orEmpty(removed), Missing: orEmpty(missing)})
}
