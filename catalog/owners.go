package catalog

import "context"

// Owners tells which tables are owned by a materialized topic (DESIGN.md
// "Catalog-owned tables"). ingest/topics' Manager implements it; the
// catalog asks it on every external write.
//
// An owned table can be read by anyone, but the exported write methods
// refuse it: CommitTable, CommitTransaction (when any of its tables is
// owned), RenameTable (of it) and RegisterTable with overwrite (over it)
// with ErrTableOwnedForbidden (403); DropTable with ErrTableOwned (409)
// while the topic is enabled. Dropping a table whose topic is disabled
// (but not released) is allowed, and then TableDropped is told, so that
// the topic's record goes with the table.
//
// Names a topic owns are also reserved: CreateTable, RegisterTable,
// RenameTable (to it), CreateView, RegisterView and RenameView (to it)
// refuse them with ErrTableAlreadyExists (409), naming the topic, even
// before the table exists (a topic's dead letter table is created on
// first use), so that no user table is taken over and then locked.
//
// Tarn's own writers commit through TableIO, which does not ask: a
// pipeline's commits and a manager's spec evolution pass. A topic
// manager creating its topic's table through CreateTable marks its
// context with OwnerContext.
type Owners interface {
	// Owner reports the topic that owns table id, and whether that topic
	// is enabled; ok is false for a table no topic owns. It is called on
	// the commit path, so it must be fast and must not call back into the
	// Catalog.
	Owner(id Ident) (topic string, enabled bool, ok bool)
	// TableDropped is called after an owned, disabled table was dropped.
	// An error is logged: the table is gone either way.
	TableDropped(ctx context.Context, id Ident) error
}

// ownersBox lets atomic.Pointer hold an interface value.
type ownersBox struct{ o Owners }

// SetOwners installs the ownership hook (nil removes it). It is a setter,
// not a Config field, because the owner (a topic manager) is built over
// the Catalog. Safe for concurrent use with every other method.
func (c *Catalog) SetOwners(o Owners) {
	if o == nil {
		c.owners.Store(nil)
		return
	}
	c.owners.Store(&ownersBox{o})
}

func (c *Catalog) ownersHook() Owners {
	if b := c.owners.Load(); b != nil {
		return b.o
	}
	return nil
}

// ownerCtxKey keys the topic of OwnerContext.
type ownerCtxKey struct{}

// OwnerContext marks ctx as the owning topic's own: a CreateTable under
// it may take a name topic owns (the topic manager creating the topic's
// table). Nothing else may use it.
func OwnerContext(ctx context.Context, topic string) context.Context {
	return context.WithValue(ctx, ownerCtxKey{}, topic)
}

// checkNameUnreserved refuses to create (or rename, register) a table or
// view at id when a topic owns or reserves that name: the topic's table
// or its dead letter table. Nothing is changed by a refused call.
func (c *Catalog) checkNameUnreserved(ctx context.Context, id Ident, what string) error {
	o := c.ownersHook()
	if o == nil {
		return nil
	}
	topic, _, ok := o.Owner(id)
	if !ok {
		return nil
	}
	if by, _ := ctx.Value(ownerCtxKey{}).(string); by == topic {
		return nil
	}
	return Errorf(ErrTableAlreadyExists,
		"Cannot %s %s: the name is reserved by Tarn for Kafka topic %s (the topic's table or its dead letter table); choose another name, or release the topic first (DELETE /management/v1/topics/%s?release=true)",
		what, id, topic, topic)
}

// checkWritable refuses an external write to a table a topic owns.
func (c *Catalog) checkWritable(id Ident, what string) error {
	o := c.ownersHook()
	if o == nil {
		return nil
	}
	if topic, enabled, ok := o.Owner(id); ok {
		state := "disabled"
		if enabled {
			state = "enabled"
		}
		return Errorf(ErrTableOwnedForbidden,
			"Cannot %s %s: the table is owned by Tarn, materialized from Kafka topic %s (%s); release it first (DELETE /management/v1/topics/%s?release=true)",
			what, id, topic, state, topic)
	}
	return nil
}

// checkDroppable refuses to drop a table whose topic is enabled and
// reports whether the table is owned by a disabled topic (to be told
// after the drop).
func (c *Catalog) checkDroppable(id Ident) (owned bool, err error) {
	o := c.ownersHook()
	if o == nil {
		return false, nil
	}
	topic, enabled, ok := o.Owner(id)
	switch {
	case !ok:
		return false, nil
	case enabled:
		return true, Errorf(ErrTableOwned,
			"Cannot drop %s: Kafka topic %s is materialized into it; disable the topic first (DELETE /management/v1/topics/%s)", id, topic, topic)
	}
	return true, nil
}
