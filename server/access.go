package server

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/auth"
)

// Bodies of the access management API (/management/v1/principals, roles,
// grants), JSON in kebab-case like the rest of the management API.
type (
	// CreatePrincipalRequest is the body of POST /management/v1/principals.
	CreatePrincipalRequest struct {
		ID       string `json:"id"`
		External bool   `json:"external,omitempty"`
	}
	// PrincipalResponse is a principal; Secret is set only when it was
	// just created or rotated (it is shown once and stored hashed).
	PrincipalResponse struct {
		auth.Principal
		Secret string `json:"secret,omitempty"`
	}
	// ListPrincipalsResponse is the body of GET /management/v1/principals.
	ListPrincipalsResponse struct {
		Principals []auth.Principal `json:"principals"`
	}
	// CreateRoleRequest is the body of POST /management/v1/roles.
	CreateRoleRequest struct {
		Name string `json:"name"`
	}
	// ListRolesResponse is the body of GET /management/v1/roles.
	ListRolesResponse struct {
		Roles []auth.Role `json:"roles"`
	}
	// ListGrantsResponse is the body of GET /management/v1/grants.
	ListGrantsResponse struct {
		Grants []auth.Grant `json:"grants"`
	}
)

// accessRoutes registers principals, roles and grants; every route needs
// manage on the catalog (authorize). Under --auth none they answer 503.
func (s *Server) accessRoutes(g *echo.Group) {
	g.GET("/principals", s.listPrincipals)
	g.POST("/principals", s.createPrincipal)
	g.GET("/principals/:principal", s.getPrincipal)
	g.DELETE("/principals/:principal", s.deletePrincipal)
	g.POST("/principals/:principal/rotate-secret", s.rotateSecret)
	g.PUT("/principals/:principal/roles/:role", s.assignRole)
	g.DELETE("/principals/:principal/roles/:role", s.unassignRole)
	g.GET("/roles", s.listRoles)
	g.POST("/roles", s.createRole)
	g.DELETE("/roles/:role", s.deleteRole)
	g.GET("/grants", s.listGrants)
	g.POST("/grants", s.addGrant)
	g.POST("/grants/revoke", s.revokeGrant)
}

func (s *Server) accessStore() (*auth.Store, error) {
	if s.cfg.Auth == nil {
		return nil, errAuthOff
	}
	return s.cfg.Auth.Store(), nil
}

// accessParam is the access store and path parameter param of a route
// on one principal or role. Errors: errAuthOff, 400 for a bad parameter.
func (s *Server) accessParam(c echo.Context, param string) (*auth.Store, string, error) {
	st, err := s.accessStore()
	if err != nil {
		return nil, "", err
	}
	v, err := pathParam(c, param)
	return st, v, err
}

func (s *Server) listPrincipals(c echo.Context) error {
	st, err := s.accessStore()
	if err != nil {
		return err
	}
	ps, err := st.ListPrincipals(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ListPrincipalsResponse{Principals: ps})
}

func (s *Server) createPrincipal(c echo.Context) error {
	st, err := s.accessStore()
	if err != nil {
		return err
	}
	req, err := requestBody[CreatePrincipalRequest](c)
	if err != nil {
		return err
	}
	secret, err := st.CreatePrincipal(c.Request().Context(), req.ID, req.External)
	if err != nil {
		return err
	}
	p, err := st.GetPrincipal(c.Request().Context(), req.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, PrincipalResponse{Principal: p, Secret: secret})
}

func (s *Server) getPrincipal(c echo.Context) error {
	st, id, err := s.accessParam(c, "principal")
	if err != nil {
		return err
	}
	p, err := st.GetPrincipal(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (s *Server) deletePrincipal(c echo.Context) error {
	st, id, err := s.accessParam(c, "principal")
	if err != nil {
		return err
	}
	if err := st.DeletePrincipal(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) rotateSecret(c echo.Context) error {
	st, id, err := s.accessParam(c, "principal")
	if err != nil {
		return err
	}
	secret, err := st.RotateSecret(c.Request().Context(), id)
	if err != nil {
		return err
	}
	p, err := st.GetPrincipal(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, PrincipalResponse{Principal: p, Secret: secret})
}

func (s *Server) assignRole(c echo.Context) error   { return s.setRole(c, true) }
func (s *Server) unassignRole(c echo.Context) error { return s.setRole(c, false) }

func (s *Server) setRole(c echo.Context, assign bool) error {
	st, id, err := s.accessParam(c, "principal")
	if err != nil {
		return err
	}
	role, err := pathParam(c, "role")
	if err != nil {
		return err
	}
	if err := st.SetRole(c.Request().Context(), id, role, assign); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) listRoles(c echo.Context) error {
	st, err := s.accessStore()
	if err != nil {
		return err
	}
	rs, err := st.ListRoles(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ListRolesResponse{Roles: rs})
}

func (s *Server) createRole(c echo.Context) error {
	st, err := s.accessStore()
	if err != nil {
		return err
	}
	req, err := requestBody[CreateRoleRequest](c)
	if err != nil {
		return err
	}
	if err := st.CreateRole(c.Request().Context(), req.Name); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, req)
}

func (s *Server) deleteRole(c echo.Context) error {
	st, role, err := s.accessParam(c, "role")
	if err != nil {
		return err
	}
	if err := st.DeleteRole(c.Request().Context(), role); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) listGrants(c echo.Context) error {
	st, err := s.accessStore()
	if err != nil {
		return err
	}
	gs, err := st.ListGrants(c.Request().Context(), c.QueryParam("role"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ListGrantsResponse{Grants: gs})
}

func (s *Server) addGrant(c echo.Context) error    { return s.changeGrant(c, true) }
func (s *Server) revokeGrant(c echo.Context) error { return s.changeGrant(c, false) }

func (s *Server) changeGrant(c echo.Context, add bool) error {
	st, err := s.accessStore()
	if err != nil {
		return err
	}
	g, err := requestBody[auth.Grant](c)
	if err != nil {
		return err
	}
	if g.Role == "" {
		return fmt.Errorf("%w: role is required", errBadRequest)
	}
	if add {
		err = st.AddGrant(c.Request().Context(), *g)
	} else {
		err = st.RevokeGrant(c.Request().Context(), *g)
	}
	if err != nil {
		return err
	}
	if add {
		return c.JSON(http.StatusCreated, g)
	}
	return c.NoContent(http.StatusNoContent)
}
