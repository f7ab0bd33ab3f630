package auth

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tarnhq/tarn/internal/strictjson"
)

// Privilege is an action on a securable.
type Privilege string

// Privileges. Manage implies every other privilege on the same securable
// (and, for the catalog or a namespace, on everything beneath it); write
// implies read.
const (
	// Read: load tables and views, list them, report scan metrics.
	Read Privilege = "read"
	// Write: commit to tables, replace views, set namespace properties.
	Write Privilege = "write"
	// Create: create or register tables, views and namespaces inside a
	// namespace (or, on the catalog, top-level namespaces).
	Create Privilege = "create"
	// Drop: drop the securable (a rename needs drop on the source and
	// create on the destination namespace).
	Drop Privilege = "drop"
	// Manage: topics, maintenance and grants under the securable.
	Manage Privilege = "manage"
)

// Privileges lists every privilege, in a fixed order.
var Privileges = []Privilege{Read, Write, Create, Drop, Manage}

// ParsePrivilege validates p. Errors: ErrInvalidArgument.
func ParsePrivilege(p string) (Privilege, error) {
	if slices.Contains(Privileges, Privilege(p)) {
		return Privilege(p), nil
	}
	return "", fmt.Errorf("%w: privilege must be one of read, write, create, drop, manage; got %q", ErrInvalidArgument, p)
}

// implies reports whether holding have grants want on the same securable.
func (have Privilege) implies(want Privilege) bool {
	return have == want || have == Manage || (have == Write && want == Read)
}

// Kind is the kind of a securable.
type Kind string

// Securable kinds.
const (
	KindCatalog   Kind = "catalog"
	KindNamespace Kind = "namespace"
	KindTable     Kind = "table"
	KindView      Kind = "view"
)

// Securable is what a grant is on: the catalog, a namespace (its
// levels), or a table or view (namespace and name).
type Securable struct {
	Kind      Kind     `json:"type"`
	Namespace []string `json:"namespace,omitempty"`
	Name      string   `json:"name,omitempty"`
}

// Catalog is the whole catalog.
func Catalog() Securable { return Securable{Kind: KindCatalog} }

// Namespace is the namespace ns.
func Namespace(ns []string) Securable { return Securable{Kind: KindNamespace, Namespace: ns} }

// Table is the table ns.name.
func Table(ns []string, name string) Securable {
	return Securable{Kind: KindTable, Namespace: ns, Name: name}
}

// View is the view ns.name.
func View(ns []string, name string) Securable {
	return Securable{Kind: KindView, Namespace: ns, Name: name}
}

// Validate checks the shape of s. Errors: ErrInvalidArgument.
func (s Securable) Validate() error {
	bad := func(msg string) error { return fmt.Errorf("%w: securable %s", ErrInvalidArgument, msg) }
	for _, l := range s.Namespace {
		if l == "" || strings.ContainsRune(l, sep) {
			return bad("has an empty or invalid namespace level")
		}
	}
	switch s.Kind {
	case KindCatalog:
		if len(s.Namespace) != 0 || s.Name != "" {
			return bad("catalog takes no namespace or name")
		}
	case KindNamespace:
		if len(s.Namespace) == 0 || s.Name != "" {
			return bad("namespace needs levels and no name")
		}
	case KindTable, KindView:
		if len(s.Namespace) == 0 || s.Name == "" || strings.ContainsRune(s.Name, sep) {
			return bad(string(s.Kind) + " needs a namespace and a name")
		}
	default:
		return bad("type must be catalog, namespace, table or view")
	}
	return nil
}

// sep joins namespace levels in keys; it may not appear in names.
const sep = '\x1f'

// key is s in one string, unique per securable.
func (s Securable) key() string {
	return string(s.Kind) + string(sep) + strings.Join(s.Namespace, string(sep)) + string(sep) + s.Name
}

// String is s in the CLI's form: catalog, namespace:a.b, table:a.b.t,
// view:a.v — levels and name joined by dots when none of them holds a
// dot, else as JSON, so that each securable has one text of its own:
// namespace:["sales.eu"] (the levels), table:{"namespace":["sales.eu"],
// "name":"orders"} (the REST spec's TableIdentifier, as
// catalog.FormatIdent prints a table). ParseSecurable reads both.
func (s Securable) String() string {
	if s.Kind == KindCatalog {
		return "catalog"
	}
	// Dotted text that starts like JSON would be read as JSON.
	dotted := !slices.ContainsFunc(s.Namespace, hasDot) && !hasDot(s.Name) &&
		(len(s.Namespace) == 0 || !jsonLike(s.Namespace[0]))
	var b []byte // strings only: Marshal cannot fail
	switch {
	case s.Kind == KindNamespace && dotted:
		return "namespace:" + strings.Join(s.Namespace, ".")
	case s.Kind == KindNamespace:
		b, _ = json.Marshal(s.Namespace)
	case dotted:
		return string(s.Kind) + ":" + strings.Join(append(slices.Clone(s.Namespace), s.Name), ".")
	default:
		b, _ = json.Marshal(tableIdentifier{Namespace: s.Namespace, Name: s.Name})
	}
	return string(s.Kind) + ":" + string(b)
}

func hasDot(v string) bool { return strings.Contains(v, ".") }

// tableIdentifier is the REST spec's TableIdentifier (spec.TableIdentifier,
// not imported: it would bring the Iceberg libraries into auth).
type tableIdentifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

// jsonLike reports text ParseSecurable reads as JSON: it starts with [ or {.
func jsonLike(v string) bool { return strings.HasPrefix(v, "[") || strings.HasPrefix(v, "{") }

// ParseSecurable reads the CLI form (String's): "catalog",
// "namespace:a.b", "table:a.b.t", "view:a.v" (levels split on dots), or
// for names that hold a dot "namespace:[levels...]" and
// `table:{"namespace":[...],"name":"..."}` (view: likewise). Text that
// starts with [ or { is JSON, read strictly (strictjson: a member twice,
// an unknown member or trailing data is refused). Errors:
// ErrInvalidArgument.
func ParseSecurable(v string) (Securable, error) {
	if v == "catalog" {
		return Catalog(), nil
	}
	kind, path, ok := strings.Cut(v, ":")
	if !ok || path == "" {
		return Securable{}, fmt.Errorf("%w: securable must be catalog, namespace:NS, table:NS.NAME or view:NS.NAME; got %q", ErrInvalidArgument, v)
	}
	var s Securable
	switch Kind(kind) {
	case KindNamespace:
		levels := strings.Split(path, ".")
		if jsonLike(path) {
			levels = nil
			if err := strictjson.DecodeKnown([]byte(path), &levels); err != nil {
				return Securable{}, fmt.Errorf(`%w: namespace: want NS (levels joined by dots) or ["level", ...]; got %q`, ErrInvalidArgument, path)
			}
		}
		s = Namespace(levels)
	case KindTable, KindView:
		if jsonLike(path) {
			var ti tableIdentifier
			if err := strictjson.DecodeKnown([]byte(path), &ti); err != nil {
				return Securable{}, fmt.Errorf(`%w: %s: want NS.NAME or {"namespace": [...], "name": "..."}; got %q`, ErrInvalidArgument, kind, path)
			}
			s = Securable{Kind: Kind(kind), Namespace: ti.Namespace, Name: ti.Name}
			break
		}
		parts := strings.Split(path, ".")
		if len(parts) < 2 {
			return Securable{}, fmt.Errorf("%w: %s needs NS.NAME, got %q", ErrInvalidArgument, kind, path)
		}
		s = Securable{Kind: Kind(kind), Namespace: parts[:len(parts)-1], Name: parts[len(parts)-1]}
	default:
		return Securable{}, fmt.Errorf("%w: unknown securable type %q", ErrInvalidArgument, kind)
	}
	return s, s.Validate()
}

// covers reports whether a grant on g applies to s: the same securable,
// or g is the catalog, or g is a namespace that contains s (a namespace
// contains itself, its children and their tables and views).
func (g Securable) covers(s Securable) bool {
	switch g.Kind {
	case KindCatalog:
		return true
	case KindNamespace:
		return s.Kind != KindCatalog && hasPrefix(s.Namespace, g.Namespace)
	default:
		return g.Kind == s.Kind && slices.Equal(g.Namespace, s.Namespace) && g.Name == s.Name
	}
}

// beneath reports whether g lies strictly inside s (so that a principal
// granted something on g may see s exist, to navigate to g).
func (g Securable) beneath(s Securable) bool {
	switch s.Kind {
	case KindCatalog:
		return g.Kind != KindCatalog
	case KindNamespace:
		if g.Kind == KindNamespace {
			return len(g.Namespace) > len(s.Namespace) && hasPrefix(g.Namespace, s.Namespace)
		}
		return (g.Kind == KindTable || g.Kind == KindView) && hasPrefix(g.Namespace, s.Namespace)
	}
	return false
}

func hasPrefix(ns, prefix []string) bool {
	return len(ns) >= len(prefix) && slices.Equal(ns[:len(prefix)], prefix)
}

// Grant is one privilege on one securable, held by a role.
type Grant struct {
	Role      string    `json:"role"`
	Privilege Privilege `json:"privilege"`
	On        Securable `json:"on"`
}

// key is the grant's record key.
func (g Grant) key() string {
	return g.Role + string(sep) + string(g.Privilege) + string(sep) + g.On.key()
}

// Identity is an authenticated caller.
type Identity struct {
	// Principal names the caller: a local client id, or the mapped claim
	// of an external issuer's token.
	Principal string
	// Issuer is the token's iss.
	Issuer string
	// Root may do anything (the bootstrap principal; only ever set for
	// tokens Tarn issued).
	Root bool
	// Roles are the caller's roles: stored ones and, for external
	// tokens, those of the roles claim.
	Roles []string
	// Expires is the token's expiry.
	ExpiresUnix int64
}

// Authorizer answers whether an identity holds a privilege. The zero
// value of Decision-returning implementations never allows by accident:
// AllowAll is the explicit opt-out for --auth none.
type Authorizer interface {
	// Allowed reports whether id holds p on s (directly, through a grant
	// on a containing namespace or the catalog, or through an implying
	// privilege).
	Allowed(id *Identity, p Privilege, s Securable) bool
	// Visible reports whether id may see that s exists: it holds any
	// privilege that applies to s, or any grant on something beneath s
	// (so the namespaces leading to a granted table are listed).
	Visible(id *Identity, s Securable) bool
}

// AllowAll allows everything: the authorizer of --auth none.
type AllowAll struct{}

// Allowed is always true.
func (AllowAll) Allowed(*Identity, Privilege, Securable) bool { return true }

// Visible is always true.
func (AllowAll) Visible(*Identity, Securable) bool { return true }

// grantsAuthorizer decides from a snapshot of grants by role.
type grantsAuthorizer struct{ snap *snapshot }

func (a grantsAuthorizer) Allowed(id *Identity, p Privilege, s Securable) bool {
	if id == nil {
		return false
	}
	if id.Root {
		return true
	}
	for _, r := range id.Roles {
		for _, g := range a.snap.grants[r] {
			if g.Privilege.implies(p) && g.On.covers(s) {
				return true
			}
		}
	}
	return false
}

func (a grantsAuthorizer) Visible(id *Identity, s Securable) bool {
	if id == nil {
		return false
	}
	if id.Root {
		return true
	}
	for _, r := range id.Roles {
		for _, g := range a.snap.grants[r] {
			if g.On.covers(s) || g.On.beneath(s) {
				return true
			}
		}
	}
	return false
}
