package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"
	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/spec"
)

// Auth routes (Tarn's own and the spec's deprecated one, which Spark,
// pyiceberg and iceberg-go still default to).
const (
	tokenPath       = "/oauth/tokens"
	specTokenPath   = "/v1/oauth/tokens"
	jwksPath        = "/.well-known/jwks.json"
	identityContext = "tarn.identity"
)

// errAuthOff answers the principal, role and grant routes under
// --auth none: there is nobody to grant anything to.
var errAuthOff = echo.NewHTTPError(http.StatusServiceUnavailable, "auth is not configured (--auth none)")

// authRoutes registers the token endpoint and the key set.
func (s *Server) authRoutes(e *echo.Echo) {
	if s.cfg.Auth == nil {
		return
	}
	e.POST(tokenPath, s.token)
	e.POST(specTokenPath, s.token)
	e.GET(jwksPath, func(c echo.Context) error { return c.JSON(http.StatusOK, s.cfg.Auth.JWKS()) })
}

// needsToken reports whether path is behind the bearer token in oauth2
// mode: every /v1 and /management route but the token endpoint, and
// /metrics unless Config.PublicMetrics. Health, readiness and the key
// set stay open: they reveal nothing and probes carry no token.
func (s *Server) needsToken(path string) bool {
	switch {
	case path == specTokenPath || path == tokenPath:
		return false
	case path == "/metrics":
		return !s.cfg.PublicMetrics
	}
	return path == "/v1" || strings.HasPrefix(path, "/v1/") || path == "/management" || strings.HasPrefix(path, "/management/")
}

// authenticate is the bearer-token middleware (oauth2 mode): a missing,
// malformed, expired, wrongly signed or wrong-issuer token is 401
// NotAuthorizedException with WWW-Authenticate; then authorize decides
// 403. Tokens are never logged: errors name only why a token failed.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Auth == nil || !s.needsToken(c.Request().URL.Path) {
			return next(c)
		}
		h := c.Request().Header.Get(echo.HeaderAuthorization)
		scheme, tok, _ := strings.Cut(h, " ")
		if h == "" || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tarn"`)
			return fmt.Errorf("%w: a bearer token is required", auth.ErrUnauthenticated)
		}
		id, err := s.cfg.Auth.Authenticate(c.Request().Context(), strings.TrimSpace(tok))
		if err != nil {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tarn", error="invalid_token"`)
			return err
		}
		c.Set(identityContext, id)
		return next(c)
	}
}

// authorizeRequest is the middleware that runs authorize in oauth2 mode,
// after authenticate and decodeRequest: the request body, if the route
// takes one, is already decoded (strictly, once), and authorize reads
// that value. It fails closed: a route behind the token without an
// identity (authenticate did not run) is 401.
func (s *Server) authorizeRequest(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Auth == nil || !s.needsToken(c.Request().URL.Path) {
			return next(c)
		}
		id := identity(c)
		if id == nil {
			return fmt.Errorf("%w: no identity", auth.ErrUnauthenticated)
		}
		if err := s.authorize(c, id); err != nil {
			return err
		}
		return next(c)
	}
}

// identity returns the caller (nil under --auth none).
func identity(c echo.Context) *auth.Identity {
	id, _ := c.Get(identityContext).(*auth.Identity)
	return id
}

// authorizer returns the decision maker for this request: allow-all
// under --auth none.
func (s *Server) authorizer(ctx context.Context) (auth.Authorizer, error) {
	if s.cfg.Auth == nil {
		return auth.AllowAll{}, nil
	}
	return s.cfg.Auth.Store().Authorizer(ctx)
}

// check is one privilege on one securable a request needs.
type check struct {
	p  auth.Privilege
	on auth.Securable
}

// visibleCheck asks only that the caller may see the securable.
const visible auth.Privilege = ""

// authorize decides whether id may make this request, by route template
// (restRoutes, managementRoutes), path parameters and, for routes that
// name their targets in the body, the body as decodeRequest decoded it:
// the very value the handler acts on (the TableUpdates the catalog
// applies, not a second reading of the JSON). It runs before the
// handler, so a refused request changes nothing. A route it does not
// know needs manage on the catalog: new routes fail closed.
func (s *Server) authorize(c echo.Context, id *auth.Identity) error {
	checks, err := s.checksFor(c)
	if err != nil {
		return err
	}
	az, err := s.authorizer(c.Request().Context())
	if err != nil {
		return err
	}
	for _, ch := range checks {
		ok := false
		if ch.p == visible {
			ok = az.Visible(id, ch.on)
		} else {
			ok = az.Allowed(id, ch.p, ch.on)
		}
		if !ok {
			what := "see"
			if ch.p != visible {
				what = string(ch.p)
			}
			target := ch.on.String()
			switch c.Path() {
			case "/management/v1/topics/:topic", "/management/v1/topics/:topic/resume", "/management/v1/topics/:topic/dead-letters":
				// Name the topic, not its table's namespace: a topic of a
				// namespace the caller may not see and a missing one are
				// refused alike.
				name, _ := pathParam(c, "topic")
				target = "topic " + name
			}
			return fmt.Errorf("%w: principal %q may not %s %s", catalog.ErrForbidden, id.Principal, what, target)
		}
	}
	return nil
}

// checksFor lists the privileges the request needs. A body the checks
// depend on that lacks what names the securable (a rename without its
// source, a transaction change without its identifier, a namespace
// create without levels) is 400 here, never "no checks".
func (s *Server) checksFor(c echo.Context) ([]check, error) {
	route := routeOf(c)
	m := c.Request().Method
	ns := func() (auth.Securable, error) {
		n, err := namespaceParam(c)
		return auth.Namespace(n), err
	}
	obj := func(param string, mk func([]string, string) auth.Securable) (auth.Securable, error) {
		id, err := identParam(c, param)
		return mk(id.Namespace, id.Name), err
	}
	one := func(p auth.Privilege, s auth.Securable, err error) ([]check, error) {
		return []check{{p, s}}, err
	}
	switch route {
	case "/config", "/metrics":
		if route == "/metrics" {
			return one(auth.Manage, auth.Catalog(), nil)
		}
		return nil, nil // any authenticated caller
	case "/namespaces":
		if m == http.MethodGet {
			if p := c.QueryParam("parent"); p != "" {
				return one(visible, auth.Namespace(strings.Split(p, namespaceSeparator)), nil)
			}
			return nil, nil // filtered by visibleNamespaces
		}
		req, err := requestBody[spec.CreateNamespaceRequest](c)
		if err != nil {
			return nil, err
		}
		if len(req.Namespace) == 0 {
			return nil, fmt.Errorf("%w: namespace is required", errBadRequest)
		}
		checks := []check{{auth.Create, parentOf(req.Namespace)}}
		return append(checks, s.namespaceLocationChecks(c, req.Namespace, req.Properties)...), nil
	case "/namespaces/:namespace":
		n, err := ns()
		switch m {
		case http.MethodDelete:
			return one(auth.Drop, n, err)
		default:
			return one(visible, n, err)
		}
	case "/namespaces/:namespace/properties":
		n, err := ns()
		if err != nil {
			return nil, err
		}
		req, err := requestBody[spec.UpdateNamespacePropertiesRequest](c)
		if err != nil {
			return nil, err
		}
		return append([]check{{auth.Write, n}}, s.namespaceLocationChecks(c, n.Namespace, req.Updates)...), nil
	case "/namespaces/:namespace/tables", "/namespaces/:namespace/views":
		n, err := ns()
		if m == http.MethodGet {
			return one(visible, n, err) // entries filtered by visibleIdents
		}
		if err != nil {
			return nil, err
		}
		// createTable, stage-create and createView with an explicit
		// location or (tables) write.data.path / write.metadata.path.
		var location string
		var props map[string]string
		if route == "/namespaces/:namespace/tables" {
			req, err := requestBody[spec.CreateTableRequest](c)
			if err != nil {
				return nil, err
			}
			location, props = req.Location, req.Properties
		} else {
			req, err := requestBody[spec.CreateViewRequest](c)
			if err != nil {
				return nil, err
			}
			location, props = req.Location, req.Properties
		}
		if (location != "" && s.locationNeedsManage(c, n.Namespace, location, true)) ||
			s.pathPropertiesNeedManage(c, n.Namespace, props) {
			return []check{{auth.Create, n}, {auth.Manage, auth.Catalog()}}, nil
		}
		return []check{{auth.Create, n}}, nil
	case "/namespaces/:namespace/register", "/namespaces/:namespace/register-view":
		n, err := ns()
		if err != nil {
			return nil, err
		}
		// Registering adopts a metadata file the caller names, whose
		// table location (inside the file) may be any other table's:
		// with create alone a principal could read a table it may not
		// by registering that table's metadata in its own namespace.
		// So registering needs manage on the catalog too.
		checks := []check{{auth.Create, n}, {auth.Manage, auth.Catalog()}}
		if route == "/namespaces/:namespace/register-view" {
			_, err := requestBody[spec.RegisterViewRequest](c)
			return checks, err
		}
		req, err := requestBody[spec.RegisterTableRequest](c)
		if err != nil {
			return nil, err
		}
		if req.Overwrite {
			checks = append(checks, check{auth.Write, auth.Table(n.Namespace, req.Name)}, check{auth.Drop, auth.Table(n.Namespace, req.Name)})
		}
		return checks, nil
	case "/namespaces/:namespace/tables/:table", "/namespaces/:namespace/views/:view":
		param, mk := "table", auth.Table
		if strings.HasSuffix(route, ":view") {
			param, mk = "view", auth.View
		}
		t, err := obj(param, mk)
		switch m {
		case http.MethodGet, http.MethodHead:
			return one(auth.Read, t, err)
		case http.MethodPost:
			if err != nil {
				return nil, err
			}
			if param == "view" {
				req, err := requestBody[spec.CommitViewRequest](c)
				if err != nil {
					return nil, err
				}
				return commitChecks(s, c, t, nil, req.Updates)
			}
			req, err := requestBody[spec.CommitTableRequest](c)
			if err != nil {
				return nil, err
			}
			return commitChecks(s, c, t, req.Requirements, req.Updates)
		case http.MethodDelete:
			return one(auth.Drop, t, err)
		}
	case "/namespaces/:namespace/tables/:table/credentials":
		// Storage credentials for the table's files: read (callerAccess
		// narrows them to read-only without write).
		t, err := obj("table", auth.Table)
		return one(auth.Read, t, err)
	case "/namespaces/:namespace/tables/:table/sign":
		// Remote signing: reading files needs read, anything else write.
		t, err := obj("table", auth.Table)
		if err != nil {
			return nil, err
		}
		req, err := requestBody[spec.RemoteSignRequest](c)
		if err != nil {
			return nil, err
		}
		if m := strings.ToUpper(req.Method); m == http.MethodGet || m == http.MethodHead {
			return one(auth.Read, t, nil)
		}
		return one(auth.Write, t, nil)
	case "/namespaces/:namespace/tables/:table/metrics":
		t, err := obj("table", auth.Table)
		return one(auth.Read, t, err)
	case "/tables/rename", "/views/rename":
		mk := auth.Table
		if route == "/views/rename" {
			mk = auth.View
		}
		req, err := requestBody[spec.RenameTableRequest](c)
		if err != nil {
			return nil, err
		}
		if req.Source == nil || req.Destination == nil {
			return nil, fmt.Errorf("%w: source and destination are required", errBadRequest)
		}
		return []check{{auth.Drop, mk(req.Source.Namespace, req.Source.Name)}, {auth.Create, auth.Namespace(req.Destination.Namespace)}}, nil
	case "/transactions/commit":
		req, err := requestBody[spec.CommitTransactionRequest](c)
		if err != nil {
			return nil, err
		}
		var checks []check
		for i, ch := range req.TableChanges {
			if ch.Identifier == nil {
				return nil, fmt.Errorf("%w: table-changes[%d] has no identifier", errBadRequest, i)
			}
			more, err := commitChecks(s, c, auth.Table(ch.Identifier.Namespace, ch.Identifier.Name), ch.Requirements, ch.Updates)
			if err != nil {
				return nil, err
			}
			checks = append(checks, more...)
		}
		return checks, nil
	case "/management/v1/topics":
		if m == http.MethodGet {
			return nil, nil // filtered by visibleTopics
		}
		req, err := requestBody[topics.TopicConfig](c)
		if err != nil {
			return nil, err
		}
		t, err := topics.ParseTable(req.Table)
		if err != nil {
			return nil, err // says only what is wrong with the name sent
		}
		return one(auth.Manage, auth.Namespace(t.Namespace), nil)
	case "/management/v1/topics/:topic", "/management/v1/topics/:topic/resume", "/management/v1/topics/:topic/dead-letters":
		return one(auth.Manage, s.topicNamespace(c), nil)
	case "/management/v1/tables/:table/formats":
		// A table's formats: read on it, like loading it.
		id, err := ParseTableName(catalog.TableName(c.Param("table")))
		if err != nil {
			return nil, err
		}
		return one(auth.Read, auth.Table(id.Namespace, id.Name), nil)
	case "/management/v1/publish/resume", "/management/v1/publish/sync":
		// Publishing a table elsewhere (and taking a target's table
		// over) is managing it, as running its maintenance is.
		req, err := requestBody[PublishRequest](c)
		if err != nil {
			return nil, err
		}
		id, err := ParseTableName(req.Table)
		if err != nil {
			return nil, err
		}
		return one(auth.Manage, auth.Table(id.Namespace, id.Name), nil)
	case "/management/v1/maintenance/run":
		req, err := requestBody[RunMaintenanceRequest](c)
		if err != nil {
			return nil, err
		}
		id, err := ParseTableName(req.Table)
		if err != nil {
			return nil, err // says only what is wrong with the name sent
		}
		return one(auth.Manage, auth.Table(id.Namespace, id.Name), nil)
	case "/management/v1/grants", "/management/v1/grants/revoke":
		// Granting or revoking a privilege on a securable needs manage on
		// it (inherited from its namespaces and the catalog): a
		// namespace's manager hands out access to that namespace only.
		// Listing every grant needs manage on the catalog.
		if m != http.MethodPost {
			break
		}
		g, err := requestBody[auth.Grant](c)
		if err != nil {
			return nil, err
		}
		if g.On.Validate() != nil {
			break // the catalog's manager may learn the reason
		}
		return one(auth.Manage, g.On, nil)
	}
	return one(auth.Manage, auth.Catalog(), nil)
}

// updateAction is what commitChecks reads of a decoded table or view
// update (table.Update and view.Update both have it).
type updateAction interface{ Action() string }

// commitChecks is what a commit to table or view t (a single commit or a
// change of a transaction) needs: write on t; create on t's namespace
// when its requirements hold assert-create (the commit creates the
// table, as createTable does); and manage on the catalog when one of the
// decoded updates (the values the catalog applies, whatever JSON
// spelling carried them) moves its files outside the namespace's own
// directory (setLocationChecks).
func commitChecks[U updateAction](s *Server, c echo.Context, t auth.Securable, reqs table.Requirements, updates []U) ([]check, error) {
	checks := []check{{auth.Write, t}}
	if slices.ContainsFunc(reqs, func(r table.Requirement) bool { return r.GetType() == "assert-create" }) {
		checks = append(checks, check{auth.Create, auth.Namespace(t.Namespace)})
	}
	fields := make([]catalog.UpdateFields, 0, len(updates))
	for _, u := range updates {
		switch u.Action() { // the spec's names, the same for views
		case table.UpdateSetLocation, table.UpdateSetProperties:
			f, err := catalog.FieldsOf(u)
			if err != nil {
				return nil, err
			}
			fields = append(fields, f)
		}
	}
	return append(checks, s.setLocationChecks(c, t.Namespace, fields)...), nil
}

// setLocationChecks asks manage on the catalog when updates move a table
// or view of namespace ns, or some of its files (catalog.FilePathProperties),
// outside ns's own directory.
func (s *Server) setLocationChecks(c echo.Context, ns []string, updates []catalog.UpdateFields) []check {
	for _, u := range updates {
		if (u.Action == table.UpdateSetLocation && s.locationNeedsManage(c, ns, u.Location, false)) ||
			(u.Action == table.UpdateSetProperties && s.pathPropertiesNeedManage(c, ns, u.Updates)) {
			return []check{{auth.Manage, auth.Catalog()}}
		}
	}
	return nil
}

// namespaceLocationChecks asks manage on the catalog when namespace
// properties props set a "location" (the parent of the namespace's new
// tables and views) outside the namespace's own directory: new tables
// would otherwise be made in another namespace's directory.
func (s *Server) namespaceLocationChecks(c echo.Context, ns []string, props map[string]string) []check {
	if loc := props["location"]; loc != "" && s.locationNeedsManage(c, ns, strings.TrimRight(loc, "/")+"/x", false) {
		return []check{{auth.Manage, auth.Catalog()}}
	}
	return nil
}

// pathPropertiesNeedManage reports whether table properties props set a
// path property (catalog.FilePathProperties) outside namespace ns's own
// directory: as with a location there, some of the table's files would
// be written into (and purged from) a directory of another namespace.
func (s *Server) pathPropertiesNeedManage(c echo.Context, ns []string, props map[string]string) bool {
	for _, k := range catalog.FilePathProperties {
		if v := props[k]; v != "" && s.locationNeedsManage(c, ns, v, false) {
			return true
		}
	}
	return false
}

// nsLevel is a namespace level that is its own directory name: the
// catalog's pathSegment leaves it unchanged (other levels are rewritten,
// and two namespaces could share a directory).
var nsLevel = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// locationNeedsManage reports whether a client-chosen table location
// (createTable's or stage-create's "location", a set-location update)
// needs manage on the catalog: it does unless it lies strictly under
// the namespace's own default directory, <warehouse>/<level>/<level>...
// A location elsewhere could be another table's directory, whose files
// the caller would then read (and be vended credentials for) through a
// table of its own. The namespace's "location" property does not count:
// a writer of the namespace may set it. With ignoredOutside, a location
// outside the warehouse is fine: createTable replaces it with a new one.
func (s *Server) locationNeedsManage(c echo.Context, ns []string, loc string, ignoredOutside bool) bool {
	wh, err := s.warehouse(c)
	if err != nil {
		return true
	}
	if ignoredOutside && !wh.Contains(loc) {
		return false // malformed (400) or replaced by a new location
	}
	root, err1 := url.Parse(wh.Location)
	u, err2 := url.Parse(loc)
	if err1 != nil || err2 != nil || len(ns) == 0 || u.Scheme != root.Scheme || u.Host != root.Host ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return true
	}
	dir := strings.TrimSuffix(root.Path, "/")
	for _, l := range ns {
		if !nsLevel.MatchString(l) || strings.Trim(l, ".") == "" {
			return true
		}
		dir += "/" + l
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return !strings.HasPrefix(path.Clean(u.Path), dir+"/")
}

// parentOf is what creating namespace ns needs create on: its parent,
// or the catalog for a top-level namespace.
func parentOf(ns []string) auth.Securable {
	if len(ns) <= 1 {
		return auth.Catalog()
	}
	return auth.Namespace(ns[:len(ns)-1])
}

// topicNamespace is the namespace of the table of the topic in the path;
// the catalog when the topic is unknown (so only catalog managers learn
// that it is missing).
func (s *Server) topicNamespace(c echo.Context) auth.Securable {
	name, err := pathParam(c, "topic")
	if err != nil || s.cfg.Topics == nil {
		return auth.Catalog()
	}
	st, err := s.cfg.Topics.Get(c.Request().Context(), name)
	if err != nil {
		return auth.Catalog()
	}
	t, err := topics.ParseTable(st.Table)
	if err != nil {
		return auth.Catalog()
	}
	return auth.Namespace(t.Namespace)
}

// visibleOnly sets page.Keep to the caller's visibility (of namespaces,
// or of the tables or views mk names): the store then pages over what the
// caller may see, so neither the entries nor the page tokens name a
// hidden one. Without an identity (auth off) page is unchanged.
func (s *Server) visibleOnly(c echo.Context, page *catalog.Page, mk func(ns []string, name string) auth.Securable) error {
	id := identity(c)
	if id == nil {
		return nil
	}
	az, err := s.authorizer(c.Request().Context())
	if err != nil {
		return err
	}
	keep := page.Keep
	page.Keep = func(ns catalog.Namespace, name, mloc string) bool {
		return az.Visible(id, mk(ns, name)) && (keep == nil || keep(ns, name, mloc))
	}
	return nil
}

// visibleTopics keeps the topics whose table's namespace the caller
// manages.
func (s *Server) visibleTopics(c echo.Context, list []topics.Status) ([]topics.Status, error) {
	id := identity(c)
	if id == nil {
		return list, nil
	}
	az, err := s.authorizer(c.Request().Context())
	if err != nil {
		return nil, err
	}
	out := list[:0:0]
	for _, st := range list {
		if t, err := topics.ParseTable(st.Table); err == nil && az.Allowed(id, auth.Manage, auth.Namespace(t.Namespace)) {
			out = append(out, st)
		}
	}
	return out, nil
}

// token serves POST /oauth/tokens and /v1/oauth/tokens: a form body
// (RFC 6749 §4.4), client credentials in the body or HTTP Basic (whose
// parts are form-encoded, §2.3.1), or a bearer token naming the caller
// of a token exchange (RFC 8693, with actor_token). Errors use OAuth2's JSON form, not
// ErrorModel, as the spec's OAuthError says.
func (s *Server) token(c echo.Context) error {
	r := c.Request()
	c.Response().Header().Set("Cache-Control", "no-store")
	oauthErr := func(status int, code, desc string) error {
		return c.JSON(status, auth.OAuthError{Code: code, Description: desc})
	}
	if ct := r.Header.Get(echo.HeaderContentType); !strings.HasPrefix(ct, echo.MIMEApplicationForm) {
		return oauthErr(http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
	}
	if err := r.ParseForm(); err != nil {
		return oauthErr(http.StatusBadRequest, "invalid_request", "malformed form body")
	}
	req := auth.TokenRequest{GrantType: r.PostForm.Get("grant_type"), ClientID: r.PostForm.Get("client_id"),
		ClientSecret: r.PostForm.Get("client_secret"), Scope: r.PostForm.Get("scope"),
		SubjectToken: r.PostForm.Get("subject_token"), SubjectTokenType: r.PostForm.Get("subject_token_type"),
		ActorToken: r.PostForm.Get("actor_token"), ActorTokenType: r.PostForm.Get("actor_token_type")}
	if scheme, tok, _ := strings.Cut(r.Header.Get(echo.HeaderAuthorization), " "); strings.EqualFold(scheme, "Bearer") {
		req.ClientToken = strings.TrimSpace(tok) // a token exchange's caller (auth.Service.Token)
	}
	if u, p, ok := r.BasicAuth(); ok {
		u1, err1 := url.QueryUnescape(u)
		p1, err2 := url.QueryUnescape(p)
		if errors.Join(err1, err2) != nil {
			return oauthErr(http.StatusBadRequest, "invalid_request", "malformed Basic credentials")
		}
		if req.ClientID != "" && req.ClientID != u1 {
			return oauthErr(http.StatusBadRequest, "invalid_request", "client_id differs between Basic and the body")
		}
		req.ClientID, req.ClientSecret = u1, p1
	}
	resp, err := s.cfg.Auth.Token(r.Context(), req)
	var oe *auth.OAuthError
	if errors.As(err, &oe) {
		if oe.Status == http.StatusUnauthorized {
			c.Response().Header().Set("WWW-Authenticate", `Basic realm="tarn"`)
		}
		return c.JSON(oe.Status, oe)
	} else if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}
