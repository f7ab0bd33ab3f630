package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/spec"
)

func (s *Server) listTables(c echo.Context) error {
	return s.listTabulars(c, s.cat.ListTables)
}

func (s *Server) listTabulars(c echo.Context, list func(ctx context.Context, ns catalog.Namespace, page catalog.Page) ([]catalog.Ident, string, error)) error {
	wh, err := s.warehouse(c)
	if err != nil {
		return err
	}
	ns, err := namespaceParam(c)
	if err != nil {
		return err
	}
	page, err := pageParams(c)
	if err != nil {
		return err
	}
	// Only this warehouse's tables and views: namespaces are shared by
	// the warehouses, and another's objects would be refused through
	// this prefix anyway.
	page.Keep = func(_ catalog.Namespace, _, mloc string) bool { return wh.Contains(mloc) }
	mk := auth.Table
	if strings.HasSuffix(c.Path(), "/views") {
		mk = auth.View
	}
	if err := s.visibleOnly(c, &page, mk); err != nil {
		return err
	}
	ids, next, err := list(c.Request().Context(), ns, page)
	if err != nil {
		return err
	}
	out := spec.ListTablesResponse{Identifiers: make([]spec.TableIdentifier, 0, len(ids)), NextPageToken: nextToken(next)}
	for _, id := range ids {
		out.Identifiers = append(out.Identifiers, spec.TableIdentifier{Namespace: id.Namespace, Name: id.Name})
	}
	return c.JSON(http.StatusOK, out)
}

// makeIn is the body of the handlers that make a table or view in the
// path's namespace from a JSON request of type Req (createTable,
// registerTable, createView, registerView): resolve the warehouse and the
// namespace, take the decoded body, make, send.
func makeIn[Req any](s *Server, c echo.Context,
	mk func(ctx context.Context, wh *catalog.Warehouse, ns catalog.Namespace, req Req) (*catalog.Loaded, error),
	send func(echo.Context, *catalog.Loaded) error) error {
	wh, err := s.warehouse(c)
	if err != nil {
		return err
	}
	ns, err := namespaceParam(c)
	if err != nil {
		return err
	}
	req, err := requestBody[Req](c)
	if err != nil {
		return err
	}
	t, err := mk(c.Request().Context(), wh, ns, *req)
	if err != nil {
		return err
	}
	return send(c, t)
}

// sendAllSnapshots sends t with every snapshot (a create's or register's
// answer).
func (s *Server) sendAllSnapshots(c echo.Context, t *catalog.Loaded) error {
	return s.sendTable(c, t, "all")
}

func (s *Server) createTable(c echo.Context) error {
	return makeIn(s, c, s.cat.CreateTable, s.sendAllSnapshots)
}

// loadTable serves GET .../tables/{table}: `snapshots=all` (default) or
// `refs` (only snapshots some branch or tag points at); the ETag names the
// metadata file and the snapshots mode, so If-None-Match gets 304 until
// the next commit.
func (s *Server) loadTable(c echo.Context) error {
	wh, err := s.warehouse(c)
	if err != nil {
		return err
	}
	id, err := identParam(c, "table")
	if err != nil {
		return err
	}
	mode := c.QueryParam("snapshots")
	switch mode {
	case "":
		mode = "all"
	case "all", "refs":
	default:
		return fmt.Errorf("%w: snapshots must be all or refs, got %q", errBadRequest, mode)
	}
	t, err := s.cat.LoadTable(c.Request().Context(), wh, id)
	if err != nil {
		return err
	}
	return s.sendTable(c, t, mode)
}

// tableETag is the ETag of a table response: it names the metadata file and
// the snapshots mode, the two things that decide the body.
func tableETag(metadataLocation, mode string) string {
	sum := sha256.Sum256([]byte(metadataLocation + "\x00" + mode))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

func (s *Server) sendTable(c echo.Context, t *catalog.Loaded, mode string) error {
	cfg, creds, err := s.storageAccess(c, t)
	if err != nil {
		return err
	}
	// Vended credentials are fresh per response: no ETag, no 304.
	if t.MetadataLocation != "" && creds == nil {
		etag := tableETag(t.MetadataLocation, mode)
		c.Response().Header().Set("ETag", etag)
		if noneMatch(c.Request().Header.Values("If-None-Match"), etag) {
			return c.NoContent(http.StatusNotModified)
		}
	}
	md := json.RawMessage(t.MetadataJSON)
	if mode == "refs" {
		if md, err = refsOnly(md); err != nil {
			return err
		}
	}
	out := spec.LoadTableResult{Metadata: md, Config: cfg, StorageCredentials: creds}
	if t.MetadataLocation != "" {
		out.MetadataLocation = &t.MetadataLocation
	}
	return c.JSON(http.StatusOK, out)
}

// refsOnly drops from table metadata JSON the snapshots no ref points at.
func refsOnly(md json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(md, &m); err != nil {
		return nil, err
	}
	var refs map[string]struct {
		SnapshotID int64 `json:"snapshot-id"`
	}
	if err := json.Unmarshal(m["refs"], &refs); err != nil && m["refs"] != nil {
		return nil, err
	}
	keep := map[int64]bool{}
	for _, r := range refs {
		keep[r.SnapshotID] = true
	}
	var snaps []json.RawMessage
	if m["snapshots"] != nil {
		if err := json.Unmarshal(m["snapshots"], &snaps); err != nil {
			return nil, err
		}
	}
	kept := []json.RawMessage{}
	for _, raw := range snaps {
		var id struct {
			SnapshotID int64 `json:"snapshot-id"`
		}
		if err := json.Unmarshal(raw, &id); err != nil {
			return nil, err
		}
		if keep[id.SnapshotID] {
			kept = append(kept, raw)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	m["snapshots"] = b
	return json.Marshal(m)
}

func (s *Server) tableExists(c echo.Context) error {
	return s.exists(c, "table", s.cat.TableExists)
}

// exists answers a HEAD on a table or view: 204 when it exists, 404 (no body) when not.
func (s *Server) exists(c echo.Context, nameParam string, exists func(context.Context, catalog.Ident) (bool, error)) error {
	if _, err := s.warehouse(c); err != nil {
		return err
	}
	id, err := identParam(c, nameParam)
	if err != nil {
		return err
	}
	ok, err := exists(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if !ok {
		return c.NoContent(http.StatusNotFound)
	}
	return c.NoContent(http.StatusNoContent)
}

// checkBodyIdent refuses a commit whose body names another object than its path.
func checkBodyIdent(id catalog.Ident, body *spec.TableIdentifier) error {
	if body != nil && !id.Equal(catalog.Ident{Namespace: body.Namespace, Name: body.Name}) {
		other := catalog.Ident{Namespace: body.Namespace, Name: body.Name}
		return fmt.Errorf("%w: body identifier %s does not match the path %s", errBadRequest, other, id)
	}
	return nil
}

func (s *Server) commitTable(c echo.Context) error {
	wh, err := s.warehouse(c)
	if err != nil {
		return err
	}
	id, err := identParam(c, "table")
	if err != nil {
		return err
	}
	req, err := requestBody[spec.CommitTableRequest](c)
	if err != nil {
		return err
	}
	if err := checkBodyIdent(id, req.Identifier); err != nil {
		return err
	}
	t, err := s.cat.CommitTable(c.Request().Context(), wh, catalog.TableCommit{Ident: id, Requirements: req.Requirements, Updates: req.Updates})
	if err != nil {
		return err
	}
	// The spec's CommitTableResponse carries the ETag a later loadTable
	// (which defaults to snapshots=all, the body sent here) honours in
	// If-None-Match.
	c.Response().Header().Set("ETag", tableETag(t.MetadataLocation, "all"))
	return c.JSON(http.StatusOK, spec.CommitTableResponse{MetadataLocation: t.MetadataLocation, Metadata: t.MetadataJSON})
}

func (s *Server) dropTable(c echo.Context) error {
	wh, err := s.warehouse(c)
	if err != nil {
		return err
	}
	id, err := identParam(c, "table")
	if err != nil {
		return err
	}
	// pyiceberg sends "True": booleans are read as strconv.ParseBool does.
	purge := false
	if v := c.QueryParam("purgeRequested"); v != "" {
		if purge, err = strconv.ParseBool(v); err != nil {
			return fmt.Errorf("%w: purgeRequested must be true or false, got %q", errBadRequest, v)
		}
	}
	if err := s.cat.DropTable(c.Request().Context(), wh, id, purge); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) reportMetrics(c echo.Context) error {
	if _, err := s.warehouse(c); err != nil {
		return err
	}
	id, err := identParam(c, "table")
	if err != nil {
		return err
	}
	req, err := requestBody[spec.ReportMetricsRequest](c)
	if err != nil {
		return err
	}
	switch req.ReportType {
	case "scan-report", "commit-report":
	default:
		return fmt.Errorf("%w: report-type must be scan-report or commit-report, got %q", errBadRequest, req.ReportType)
	}
	// The table itself need not exist (yet): Iceberg's Java client reports a
	// staged create's commit metrics (Spark's CREATE TABLE AS SELECT) before
	// it commits the create, and Java's reference server accepts every
	// report. Its namespace must exist.
	if _, err := s.cat.LoadNamespace(c.Request().Context(), id.Namespace); err != nil {
		return err
	}
	s.metrics.metricsReports.WithLabelValues(req.ReportType).Inc()
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) registerTable(c echo.Context) error {
	return makeIn(s, c, s.cat.RegisterTable, s.sendAllSnapshots)
}

// renameRequest reads the decoded RenameTableRequest as identifiers.
func renameRequest(c echo.Context) (from, to catalog.Ident, err error) {
	req, err := requestBody[spec.RenameTableRequest](c)
	if err != nil {
		return from, to, err
	}
	if req.Source == nil || req.Destination == nil {
		return from, to, fmt.Errorf("%w: source and destination are required", errBadRequest)
	}
	from = catalog.Ident{Namespace: req.Source.Namespace, Name: req.Source.Name}
	to = catalog.Ident{Namespace: req.Destination.Namespace, Name: req.Destination.Name}
	return from, to, nil
}

func (s *Server) renameTable(c echo.Context) error {
	wh, err := s.warehouse(c)
	if err != nil {
		return err
	}
	from, to, err := renameRequest(c)
	if err != nil {
		return err
	}
	if err := s.cat.RenameTable(c.Request().Context(), wh, from, to); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) commitTransaction(c echo.Context) error {
	wh, err := s.warehouse(c)
	if err != nil {
		return err
	}
	req, err := requestBody[spec.CommitTransactionRequest](c)
	if err != nil {
		return err
	}
	commits := make([]catalog.TableCommit, 0, len(req.TableChanges))
	for i, tc := range req.TableChanges {
		if tc.Identifier == nil {
			return fmt.Errorf("%w: table-changes[%d] has no identifier", errBadRequest, i)
		}
		commits = append(commits, catalog.TableCommit{
			Ident:        catalog.Ident{Namespace: tc.Identifier.Namespace, Name: tc.Identifier.Name},
			Requirements: tc.Requirements,
			Updates:      tc.Updates,
		})
	}
	if err := s.cat.CommitTransaction(c.Request().Context(), wh, commits); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// noneMatch reports whether If-None-Match header values match etag (RFC
// 9110 §13.1.2): "*" matches any current representation, otherwise any
// listed entity tag, compared weakly (a W/ prefix is ignored).
func noneMatch(values []string, etag string) bool {
	for _, v := range values {
		for _, tag := range strings.Split(v, ",") {
			tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
			if tag == "*" || tag == etag {
				return true
			}
		}
	}
	return false
}
