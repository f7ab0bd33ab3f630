package server

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/spec"
)

// endpoints names every REST route Tarn serves, in the spec's
// "METHOD /v1/{prefix}/..." form, for /v1/config's `endpoints`. It must
// match restRoutes; TestConfigEndpointsMatchRoutes checks that.
var endpoints = []string{
	"GET /v1/{prefix}/namespaces",
	"POST /v1/{prefix}/namespaces",
	"GET /v1/{prefix}/namespaces/{namespace}",
	"HEAD /v1/{prefix}/namespaces/{namespace}",
	"DELETE /v1/{prefix}/namespaces/{namespace}",
	"POST /v1/{prefix}/namespaces/{namespace}/properties",
	"GET /v1/{prefix}/namespaces/{namespace}/tables",
	"POST /v1/{prefix}/namespaces/{namespace}/tables",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign",
	"POST /v1/{prefix}/namespaces/{namespace}/register",
	"POST /v1/{prefix}/tables/rename",
	"POST /v1/{prefix}/transactions/commit",
	"GET /v1/{prefix}/namespaces/{namespace}/views",
	"POST /v1/{prefix}/namespaces/{namespace}/views",
	"GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
	"POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
	"DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
	"POST /v1/{prefix}/views/rename",
	"POST /v1/{prefix}/namespaces/{namespace}/register-view",
}

// getConfig serves GET /v1/config: the warehouse named by ?warehouse= (a
// name or its root location; the default when absent) is selected by
// overrides.prefix. Errors: 404 NoSuchWarehouseException.
func (s *Server) getConfig(c echo.Context) error {
	wh, err := s.cat.Warehouse(c.QueryParam("warehouse"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, spec.CatalogConfig{
		Defaults:               map[string]string{},
		Overrides:              map[string]string{"prefix": wh.Name},
		Endpoints:              endpoints,
		IdempotencyKeyLifetime: isoDuration(s.cfg.IdempotencyKeyLifetime),
	})
}

// isoDuration formats d as an ISO-8601 duration of whole seconds ("PT30M").
func isoDuration(d time.Duration) string {
	secs := int64(d / time.Second)
	var b strings.Builder
	b.WriteString("PT")
	if h := secs / 3600; h > 0 {
		fmt.Fprintf(&b, "%dH", h)
	}
	if m := secs % 3600 / 60; m > 0 {
		fmt.Fprintf(&b, "%dM", m)
	}
	if sec := secs % 60; sec > 0 || secs == 0 {
		fmt.Fprintf(&b, "%dS", sec)
	}
	return b.String()
}
