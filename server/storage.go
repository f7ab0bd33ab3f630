package server

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/spec"
	"github.com/tarnhq/tarn/storage"
)

// headerAccessDelegation is the spec's X-Iceberg-Access-Delegation: a
// comma-separated list of "vended-credentials" and "remote-signing".
const headerAccessDelegation = "X-Iceberg-Access-Delegation"

// accessDelegation reports which delegation modes the request asks for;
// unknown values are ignored (the header is a hint, not a contract).
func accessDelegation(c echo.Context) (vend, sign bool) {
	for _, h := range c.Request().Header.Values(headerAccessDelegation) {
		for _, m := range strings.Split(h, ",") {
			switch strings.TrimSpace(m) {
			case "vended-credentials":
				vend = true
			case "remote-signing":
				sign = true
			}
		}
	}
	return vend, sign
}

// callerAccess is the access vended credentials for table id are scoped
// to: read-write when the caller may write the table (always under
// --auth none), else read-only (GetObject and ListBucket only). The
// route itself already required read (server/auth.go).
func (s *Server) callerAccess(c echo.Context, id catalog.Ident) (storage.Access, error) {
	az, err := s.authorizer(c.Request().Context())
	if err != nil {
		return 0, err
	}
	if az.Allowed(identity(c), auth.Write, auth.Table(id.Namespace, id.Name)) {
		return storage.AccessReadWrite, nil
	}
	return storage.AccessRead, nil
}

// storageAccess is the `config` and `storage-credentials` of a table
// response: for an S3 warehouse the endpoint, region and addressing;
// with `vended-credentials` asked and a role (or opted-in static keys)
// configured, credentials scoped to the table's location, in both
// `storage-credentials` and `config` (for clients that read only
// `config`); else with `remote-signing` asked, the signer settings. A
// file:// warehouse gets an empty config.
//
// When STS fails (storage.ErrVending) after createTable or registerTable
// committed the table, the response is still 200, with the table and
// without credentials (the failure is logged): a 503 would leave the table
// created and the client's retry would get 409. loadTable, stage-create
// (nothing committed) and /credentials answer 503.
func (s *Server) storageAccess(c echo.Context, t *catalog.Loaded) (map[string]string, []spec.StorageCredential, error) {
	wh, err := s.warehouse(c)
	if err != nil {
		return nil, nil, err
	}
	cfg := wh.ClientConfig()
	if !wh.IsObjectStore() {
		return cfg, nil, nil
	}
	vend, sign := accessDelegation(c)
	dirs, err := t.Directories()
	if err != nil {
		return nil, nil, err
	}
	switch {
	case vend && wh.CanVend():
		access, err := s.callerAccess(c, t.Ident)
		if err != nil {
			return nil, nil, err
		}
		creds, err := wh.VendCredentials(c.Request().Context(), dirs, access)
		if err != nil && committedNow(c, t) && errors.Is(err, storage.ErrVending) {
			// The table is already committed: failing the request would
			// leave it created, and the client's retry would get 409.
			// Answer with the table and no credentials instead; the
			// client asks GET .../credentials (or loadTable) again.
			s.log.WarnContext(c.Request().Context(), "table committed without vended credentials",
				"table", t.Ident.String(), "error", err.Error())
			return cfg, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		for _, cr := range creds {
			for k, v := range cr.Config {
				cfg[k] = v
			}
		}
		return cfg, creds, nil
	case sign && wh.CanSign():
		// Relative to the catalog's URI, which both Java's and pyiceberg's
		// signer clients use as the default signer.uri.
		ep := "v1/" + url.PathEscape(wh.Name) + "/namespaces/" + url.PathEscape(strings.Join(t.Ident.Namespace, "\x1f")) +
			"/tables/" + url.PathEscape(t.Ident.Name) + "/sign"
		cfg["s3.remote-signing-enabled"] = "true"
		cfg["signer.endpoint"] = ep
		cfg["s3.signer.endpoint"] = ep
	}
	return cfg, nil, nil
}

// committedNow reports whether t was committed by this request: a
// createTable or registerTable (POST) that is not a stage-create (which
// has no metadata location).
func committedNow(c echo.Context, t *catalog.Loaded) bool {
	return c.Request().Method == http.MethodPost && t.MetadataLocation != ""
}

// loadCredentials serves GET .../tables/{table}/credentials: fresh vended
// credentials for the table's location; an empty list when the warehouse
// vends none (file://, or S3 without a role or opted-in static keys).
func (s *Server) loadCredentials(c echo.Context) error {
	wh, err := s.warehouse(c)
	if err != nil {
		return err
	}
	id, err := identParam(c, "table")
	if err != nil {
		return err
	}
	dirs, err := s.cat.TableDirectories(c.Request().Context(), wh, id)
	if err != nil {
		return err
	}
	out := spec.LoadCredentialsResponse{StorageCredentials: []spec.StorageCredential{}}
	if wh.CanVend() {
		access, err := s.callerAccess(c, id)
		if err != nil {
			return err
		}
		creds, err := wh.VendCredentials(c.Request().Context(), dirs, access)
		if err != nil {
			return err
		}
		out.StorageCredentials = append(out.StorageCredentials, creds...)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, out)
}

// signRequest serves POST .../tables/{table}/sign (spec 1.11 remote
// signing): the S3 request is signed with Tarn's credentials only if it
// stays inside the table's location. Errors: 403 ForbiddenException
// outside it; 406 for a warehouse that is not S3; 400 for a malformed
// request.
func (s *Server) signRequest(c echo.Context) error {
	wh, err := s.warehouse(c)
	if err != nil {
		return err
	}
	id, err := identParam(c, "table")
	if err != nil {
		return err
	}
	req, err := requestBody[spec.RemoteSignRequest](c)
	if err != nil {
		return err
	}
	dirs, err := s.cat.TableDirectories(c.Request().Context(), wh, id)
	if err != nil {
		return err
	}
	res, err := wh.SignS3Request(c.Request().Context(), dirs, *req)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.JSON(http.StatusOK, res)
}
