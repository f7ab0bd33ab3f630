package catalog

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go/table"
)

// CommitObserver is told of every change to a table's metadata that the
// catalog committed: a create, a commit (REST or an in-process writer's
// through TableIO), a transaction, a registerTable (also an overwrite). Formats and catalogs that follow the
// Iceberg commit (DESIGN.md "Formats and catalogs fan out after the
// commit": the Delta log) learn of commits this way, after the pointer
// swap.
//
// TableCommitted runs on the committing goroutine with the new metadata:
// it must not block and must not call back into the Catalog.
type CommitObserver interface {
	TableCommitted(id Ident, md table.Metadata)
}

// observers is the set of CommitObservers; a copy-on-write slice, so the
// commit path reads it without a lock.
type observers struct {
	mu   sync.Mutex // serializes AddCommitObserver
	list atomic.Pointer[[]CommitObserver]
}

// AddCommitObserver adds o to the observers told of every commit. Safe
// for concurrent use with every other method.
func (c *Catalog) AddCommitObserver(o CommitObserver) {
	c.observers.mu.Lock()
	defer c.observers.mu.Unlock()
	var next []CommitObserver
	if cur := c.observers.list.Load(); cur != nil {
		next = slices.Clone(*cur)
	}
	next = append(next, o)
	c.observers.list.Store(&next)
}

// notifyCommitted tells every observer that id now has metadata md.
func (c *Catalog) notifyCommitted(id Ident, md table.Metadata) {
	cur := c.observers.list.Load()
	if cur == nil {
		return
	}
	for _, o := range *cur {
		o.TableCommitted(id, md)
	}
}

// DropObserver is an optional capability of a CommitObserver (found by
// type assertion): told that a table was dropped, after its pointer is
// gone. The catalogs Tarn publishes to follow drops this way.
// TableDropped has the same rules as TableCommitted.
type DropObserver interface {
	TableDropped(id Ident)
}

// RenameObserver is an optional capability of a CommitObserver: told
// that a table was renamed, after its pointer moved. TableRenamed has
// the same rules as TableCommitted.
type RenameObserver interface {
	TableRenamed(from, to Ident)
}

// notifyDropped tells every DropObserver that table id was dropped.
func (c *Catalog) notifyDropped(id Ident) {
	if cur := c.observers.list.Load(); cur != nil {
		for _, o := range *cur {
			if d, ok := o.(DropObserver); ok {
				d.TableDropped(id)
			}
		}
	}
}

// notifyRenamed tells every RenameObserver that table from is now to.
func (c *Catalog) notifyRenamed(from, to Ident) {
	if cur := c.observers.list.Load(); cur != nil {
		for _, o := range *cur {
			if r, ok := o.(RenameObserver); ok {
				r.TableRenamed(from, to)
			}
		}
	}
}
