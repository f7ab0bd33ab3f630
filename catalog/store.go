package catalog

import "context"

// Kind tells a table pointer from a view pointer; both share one
// identifier space.
type Kind uint8

const (
	// KindTable is an Iceberg table.
	KindTable Kind = iota + 1
	// KindView is an Iceberg view.
	KindView
)

func (k Kind) String() string {
	switch k {
	case KindTable:
		return "table"
	case KindView:
		return "view"
	}
	return "unknown"
}

// Pointer is what the store keeps per table or view: the location of its
// current metadata file and a version that grows by one with every swap.
type Pointer struct {
	Kind             Kind
	MetadataLocation string
	// Version is 1 after create and grows by one per commit; compare-and-swap
	// compares it.
	Version int64
	// Locations are the directories the table's or view's files have
	// been written under since it was created (location,
	// write.data.path, write.metadata.path, and every earlier value: after
	// a set-location the old directory still holds files its snapshots
	// reference), normalised and sorted; empty for a pointer stored before
	// Tarn recorded them (PointerLocations then derives one).
	Locations []string
}

// PointerChange is one compare-and-swap of a transaction.
type PointerChange struct {
	Ident Ident
	Kind  Kind
	// ExpectedVersion is the version the change was planned on; 0 creates
	// the pointer, which then must not exist (as a table or a view).
	ExpectedVersion int64
	// MetadataLocation is the new metadata file; "" makes the change a
	// check only: the version must match and nothing is written.
	MetadataLocation string
	// Locations, when not nil, are the directories the new metadata writes
	// under: the store adds them to the pointer's (AddLocations; they
	// never shrink) and refuses the change with LocationInUseError when
	// they overlap those of any other table or view (LocationsOverlap).
	// nil keeps the current ones; a create must set them.
	Locations []string
}

// Page asks for one page of a listing.
type Page struct {
	// Token is the opaque next-page-token of the previous page; empty for the first.
	Token string
	// Size is the most entries to return; 0 returns all.
	Size int
	// Keep, when not nil, keeps only the entries it returns true for (a
	// namespace listing passes the namespace, "" and ""; a table or view
	// listing the namespace, the name and the metadata location). A page
	// holds up to Size kept
	// entries and its token names the last entry kept, never a dropped
	// one: a listing filtered by the caller's grants leaks no hidden name,
	// not even in its page tokens.
	Keep func(ns Namespace, name, metadataLocation string) bool
}

// Store keeps namespaces and table/view pointers. It knows nothing about
// Iceberg metadata: the Catalog above it owns those semantics. Every method
// is atomic; implementations are bolt (embedded default) and, later,
// PostgreSQL. Every backend runs catalog/storetest.
type Store interface {
	// CreateNamespace creates ns with props. Errors: ErrNamespaceAlreadyExists;
	// ErrNoSuchNamespace when ns has a parent that does not exist.
	CreateNamespace(ctx context.Context, ns Namespace, props map[string]string) error
	// LoadNamespace returns ns's properties (never nil). Errors: ErrNoSuchNamespace.
	LoadNamespace(ctx context.Context, ns Namespace) (map[string]string, error)
	// ListNamespaces lists the direct children of parent (top-level
	// namespaces when parent is empty) in key order, and the token of the
	// next page ("" on the last). Errors: ErrNoSuchNamespace for a missing parent.
	ListNamespaces(ctx context.Context, parent Namespace, page Page) ([]Namespace, string, error)
	// UpdateNamespaceProperties removes then sets properties and returns the
	// removals that were present and those that were missing. It applies
	// nothing when the result fails CheckNamespaceProperties, checked in
	// the same transaction. Errors: ErrNoSuchNamespace, ErrLimitExceeded.
	UpdateNamespaceProperties(ctx context.Context, ns Namespace, removals []string, updates map[string]string) (removed, missing []string, err error)
	// DropNamespace removes an empty namespace. Errors: ErrNoSuchNamespace,
	// ErrNamespaceNotEmpty (it holds tables, views or child namespaces).
	DropNamespace(ctx context.Context, ns Namespace) error

	// LoadPointer returns the pointer of ident if it is of kind. Errors:
	// ErrNoSuchTable or ErrNoSuchView (by kind), also when ident is of the other kind.
	LoadPointer(ctx context.Context, ident Ident, kind Kind) (Pointer, error)
	// ListPointers lists the identifiers of kind in ns, by name, paged.
	// Errors: ErrNoSuchNamespace.
	ListPointers(ctx context.Context, ns Namespace, kind Kind, page Page) ([]Ident, string, error)
	// CommitPointers applies all changes or none. Errors: ErrCommitFailed
	// wrapped when a version differs; ErrTableAlreadyExists or
	// ErrViewAlreadyExists when a create finds the identifier taken;
	// ErrNoSuchNamespace when a create's namespace does not exist;
	// LocationInUseError (ErrInvalidArgument) when a change's Locations
	// overlap another pointer's, checked in the same atomic step. A
	// returned catalog sentinel or ctx.Err() promises that nothing was
	// written: the caller then deletes the metadata files it prepared. Any
	// other error leaves the outcome unknown (CommitStateUnknown), and the
	// files stay.
	CommitPointers(ctx context.Context, changes []PointerChange) error
	// DropPointer removes ident's pointer if it is of kind and returns it.
	// Errors: ErrNoSuchTable / ErrNoSuchView.
	DropPointer(ctx context.Context, ident Ident, kind Kind) (Pointer, error)
	// RenamePointer moves a pointer of kind to a new identifier. Errors:
	// ErrNoSuchTable / ErrNoSuchView for from; ErrNoSuchNamespace for to's
	// namespace; ErrTableAlreadyExists / ErrViewAlreadyExists when to is taken.
	RenamePointer(ctx context.Context, from, to Ident, kind Kind) error
}

// NotFound returns the not-found sentinel of kind.
func (k Kind) NotFound() error {
	if k == KindView {
		return ErrNoSuchView
	}
	return ErrNoSuchTable
}

// AlreadyExists returns the already-exists sentinel of kind.
func (k Kind) AlreadyExists() error {
	if k == KindView {
		return ErrViewAlreadyExists
	}
	return ErrTableAlreadyExists
}

// CheckChange checks change c against the pointer cur stored at its
// identifier (ok false when there is none), as CommitPointers must:
// AlreadyExistsError for a create of a taken identifier; ErrCommitFailed
// when the pointer was dropped, is of the other kind or has another
// version. A Store calls it on the pointer it read (and locked) in its
// write transaction, then checks a create's namespace and writes.
func CheckChange(c PointerChange, cur Pointer, ok bool) error {
	switch {
	case c.ExpectedVersion == 0 && ok:
		return AlreadyExistsError(c.Kind, cur.Kind, c.Ident)
	case c.ExpectedVersion != 0 && (!ok || cur.Kind != c.Kind):
		return Errorf(ErrCommitFailed, "%s %s was dropped concurrently", c.Kind.Title(), c.Ident)
	case c.ExpectedVersion != 0 && cur.Version != c.ExpectedVersion:
		return Errorf(ErrCommitFailed, "%s %s changed concurrently: expected version %d != %d", c.Kind.Title(), c.Ident, c.ExpectedVersion, cur.Version)
	}
	return nil
}

// Pinger is a Store whose backend can be unreachable (catalog/postgres),
// found by type assertion: /readyz asks it. A Store without it (an
// embedded file) is always reachable.
type Pinger interface {
	// Ping returns nil when the backend answers a round trip within ctx.
	Ping(ctx context.Context) error
}
