package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/apache/iceberg-go"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tarnhq/tarn/storage"
)

// maxCommitAttempts bounds server-side retries of a commit that lost the
// pointer swap but whose requirements still hold against the new head.
// Each retry re-reads and re-validates, so only genuinely compatible
// commits are rebased; 16 covers heavy contention on one table without
// letting a request spin.
const maxCommitAttempts = 16

// TableCommit is one table's part of a commit: requirements checked against
// the current metadata, then updates applied with iceberg-go's
// MetadataBuilder (REST spec CommitTableRequest).
type TableCommit struct {
	Ident        Ident
	Requirements []table.Requirement
	Updates      []table.Update
}

// CommitTable applies one table commit (REST updateTable) and returns the
// new state. A table that does not exist is created when the requirements
// hold assert-create (the second half of a staged create).
//
// Errors: ErrNoSuchTable; ErrCommitFailed (a requirement failed; 409);
// ErrInvalidArgument (an update cannot be applied; 400);
// ErrTableOwnedForbidden (a topic owns the table, see Owners; 403) —
// except for a commit that only sets or removes tunable properties
// (Config.TunablePrefixes); ErrInvalidArgument for
// a commit that sets or removes a TarnOnlyProperties key;
// ErrCommitStateUnknown (the store failed in a
// way that leaves the outcome unknown; 500).
func (c *Catalog) CommitTable(ctx context.Context, wh *Warehouse, tc TableCommit) (*Loaded, error) {
	if err := checkClientProperties(tc.Updates, nil); err != nil {
		return nil, err
	}
	if err := c.checkWritable(tc.Ident, "commit to"); err != nil && !c.tunableOnly(tc.Updates) {
		return nil, err
	}
	return c.commitTable(ctx, wh, tc)
}

// commitTable is CommitTable without the ownership check: the path of
// Tarn's own writers (TableIO).
func (c *Catalog) commitTable(ctx context.Context, wh *Warehouse, tc TableCommit) (*Loaded, error) {
	out, err := c.commitTables(ctx, wh, []TableCommit{tc})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// CommitTransaction applies commits to several tables atomically (REST
// commitTransaction): every table changes or none does. Errors as CommitTable;
// ErrInvalidArgument when a table appears twice; ErrTableOwnedForbidden
// when any table is owned by a topic (nothing is committed).
func (c *Catalog) CommitTransaction(ctx context.Context, wh *Warehouse, commits []TableCommit) error {
	if len(commits) == 0 {
		return fmt.Errorf("%w: transaction has no table changes", ErrInvalidArgument)
	}
	for i := range commits {
		if err := c.checkWritable(commits[i].Ident, "commit a transaction to"); err != nil {
			return err
		}
		if err := checkClientProperties(commits[i].Updates, nil); err != nil {
			return err
		}
		for j := range i {
			if commits[i].Ident.Equal(commits[j].Ident) {
				return fmt.Errorf("%w: table %s appears twice in one transaction", ErrInvalidArgument, commits[i].Ident)
			}
		}
	}
	_, err := c.commitTables(ctx, wh, commits)
	return err
}

type stagedCommit struct {
	change PointerChange
	base   table.Metadata // nil for a create
	next   table.Metadata
	js     []byte
	noop   bool
}

func (c *Catalog) commitTables(ctx context.Context, wh *Warehouse, commits []TableCommit) ([]*Loaded, error) {
	for _, tc := range commits {
		if err := tc.Ident.Validate(); err != nil {
			return nil, err
		}
	}
	var out []*Loaded
	err := c.swapWithRetry(ctx, func(attempt int) (bool, error) {
		staged := make([]stagedCommit, 0, len(commits))
		var written []string
		for _, tc := range commits {
			s, err := c.stage(ctx, wh, tc, attempt > 1)
			if err != nil {
				c.removeFiles(ctx, wh, written)
				return false, err
			}
			if !s.noop {
				if s.change.MetadataLocation, err = c.writeTableMetadata(ctx, wh, s.next, s.js, nextMetadataVersion(s.change.MetadataLocation, s.change.ExpectedVersion)); err != nil {
					c.removeFiles(ctx, wh, written)
					return false, err
				}
				written = append(written, s.change.MetadataLocation)
			}
			staged = append(staged, s)
		}
		if attempt > 1 {
			// Every requirement held against the heads that beat the
			// previous attempt: this attempt is a server-side rebase.
			c.metrics.commitRetries.Inc()
		}
		// A table whose entry only asserts requirements still takes part in
		// the swap as a check-only change, so a concurrent commit to it
		// between stage and swap fails the whole transaction.
		changes := make([]PointerChange, 0, len(staged))
		swapped := 0
		for _, s := range staged {
			ch := s.change
			if s.noop {
				ch.MetadataLocation = ""
			} else {
				swapped++
			}
			changes = append(changes, ch)
		}
		if _, fenced := FenceOf(ctx); fenced {
			if _, ok := c.store.(PartitionClaims); !ok {
				// Fail closed: this store cannot check the claims.
				return false, c.abandon(ctx, wh, Errorf(ErrFenced, "the store keeps no partition claims"), written...)
			}
		}
		if err := c.store.CommitPointers(ctx, changes); err != nil {
			err = c.abandon(ctx, wh, err, written...)
			return errors.Is(err, ErrCommitFailed), err
		}
		c.metrics.commits.Add(float64(swapped))
		out = make([]*Loaded, len(staged))
		for i, s := range staged {
			if !s.noop && s.base != nil {
				c.deleteOldMetadata(ctx, wh, s.change.Ident, s.base, s.next)
			}
			if s.base == nil {
				c.forgetStaged(ctx, wh, s.change.Ident) // created: signed as a table now
			}
			if !s.noop {
				c.notifyCommitted(s.change.Ident, s.next)
			}
			v := s.change.ExpectedVersion
			if !s.noop {
				v++
			}
			out[i] = &Loaded{Ident: s.change.Ident, MetadataLocation: s.change.MetadataLocation, MetadataJSON: s.js, Version: v}
			if !s.noop { // the next load on this replica needs no read
				out[i].cached = c.meta.put(s.change.MetadataLocation, s.js, s.next)
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// swapWithRetry runs attempt — stage, write metadata, swap pointers — until
// it returns anything but a lost swap (lost=true: the store refused a
// version that moved under it). Each retry re-reads every head and
// re-checks every requirement, so only a commit that still applies is
// rebased; it gives up after maxCommitAttempts, backing off a random
// 0..n ms between attempts (so rebasing writers on one hot table spread out
// instead of colliding again in lockstep) and honouring ctx.
func (c *Catalog) swapWithRetry(ctx context.Context, attempt func(n int) (lost bool, err error)) error {
	for n := 1; ; n++ {
		lost, err := attempt(n)
		if !lost || n == maxCommitAttempts {
			if errors.Is(err, ErrCommitFailed) {
				c.metrics.commitConflicts.Inc()
			}
			return err
		}
		c.log.Debug("commit lost pointer swap; rebasing", "attempt", n, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(rand.Int64N(int64(n) * int64(time.Millisecond)))):
		}
	}
}

// removeFiles deletes metadata files of a commit that certainly did not
// happen, and the directories that leaves empty (a failed create's
// metadata/ and table directory).
func (c *Catalog) removeFiles(ctx context.Context, wh *Warehouse, locs []string) {
	for _, loc := range locs {
		if err := wh.Remove(ctx, loc); err != nil {
			c.log.Warn("remove unused metadata file", "location", loc, "err", err)
			continue
		}
		wh.pruneEmptyParents(loc, 2)
	}
}

// stage reads the head of tc's table, checks the requirements and builds
// the next metadata (not yet written).
func (c *Catalog) stage(ctx context.Context, wh *Warehouse, tc TableCommit, rebase bool) (stagedCommit, error) {
	s := stagedCommit{change: PointerChange{Ident: tc.Ident, Kind: KindTable}}
	p, err := c.store.LoadPointer(ctx, tc.Ident, KindTable)
	switch {
	case errors.Is(err, ErrNoSuchTable):
		if !slices.ContainsFunc(tc.Requirements, isAssertCreate) {
			return s, err
		}
	case err != nil:
		return s, err
	default:
		if err := wh.checkOwns(KindTable, tc.Ident, p); err != nil {
			return s, err
		}
		e, err := c.meta.get(ctx, wh, p.MetadataLocation)
		if err != nil {
			return s, metadataReadError(err, p.MetadataLocation)
		}
		if s.base, err = e.table(); err != nil {
			return s, fmt.Errorf("parse metadata of %s at %s: %w", tc.Ident, p.MetadataLocation, err)
		}
		s.change.ExpectedVersion, s.change.MetadataLocation = p.Version, p.MetadataLocation
		s.js = e.js
	}
	for _, r := range tc.Requirements {
		if err := r.Validate(s.base); err != nil {
			return s, requirementFailed(r, s.base, err)
		}
	}
	if s.base != nil && len(tc.Updates) == 0 {
		s.noop = true
		return s, nil
	}
	if err := checkTableUpdates(tc.Updates); err != nil {
		return s, fmt.Errorf("%s: %w", tc.Ident, err)
	}
	updates := tc.Updates
	if s.base == nil {
		if err := tc.Ident.ValidateNew(); err != nil {
			return s, err
		}
		if err := c.checkNameFree(ctx, tc.Ident, KindTable); err != nil {
			return s, err
		}
		nsProps, err := c.store.LoadNamespace(ctx, tc.Ident.Namespace)
		if err != nil {
			return s, err
		}
		// A create commit that sets no location gets a server-assigned one,
		// as createTable would have given it.
		if !slices.ContainsFunc(updates, func(u table.Update) bool { return u.Action() == table.UpdateSetLocation }) {
			updates = append(slices.Clone(updates), table.NewSetLocationUpdate(wh.newLocation(tc.Ident, nsProps)))
		}
	}
	if s.next, err = applyUpdates(s.base, s.change.MetadataLocation, updates); err != nil {
		// On a rebase the same updates already applied to the head they
		// were planned on, so a failure now (e.g. a snapshot whose sequence
		// number a concurrent commit on another branch took) is the race,
		// not a bad request: the client refreshes and retries.
		if rebase {
			return s, Errorf(ErrCommitFailed, "Commit conflicts with a concurrent commit to %s: %v", tc.Ident, err)
		}
		return s, fmt.Errorf("%w: %s: %v", ErrInvalidArgument, tc.Ident, err)
	}
	if err := wh.checkLocation("table location", s.next.Location()); err != nil {
		return s, err
	}
	var baseProps iceberg.Properties
	if s.base != nil {
		baseProps = s.base.Properties()
	}
	if err := c.checkTableProperties(tc.Ident, baseProps, s.next.Properties()); err != nil {
		return s, err
	}
	// A create, or a commit that moves the table or one of its path
	// properties, records (and has the store check) the new directories.
	if next := tableRoots(s.next); s.base == nil || !slices.Equal(normLocations(next), normLocations(tableRoots(s.base))) {
		if s.change.Locations, err = wh.checkLocations(next); err != nil {
			return s, err
		}
	}
	if s.js, err = json.Marshal(s.next); err != nil {
		return s, err
	}
	if err := checkTableMetadata(s.base, s.next, s.js); err != nil {
		return s, fmt.Errorf("%s: %w", tc.Ident, err)
	}
	return s, nil
}

func isAssertCreate(r table.Requirement) bool { return r.GetType() == "assert-create" }

// applyUpdates applies updates to base with iceberg-go's MetadataBuilder.
// For a create (base nil) the builder starts empty: at format version 1 when
// the updates carry an upgrade-format-version (so that update is an upgrade,
// never a downgrade), else at 2, the spec's default; a fresh table UUID is
// set first so assign-uuid, if present, overrides it. An existing table's
// UUID is its identity, which clients assert (assert-table-uuid) and check
// on refresh, so assign-uuid may not change it (the Java reference refuses
// to reassign it too; iceberg-go's builder does not).
func applyUpdates(base table.Metadata, baseLoc string, updates []table.Update) (table.Metadata, error) {
	if base != nil {
		next, err := table.UpdateTableMetadata(base, updates, baseLoc)
		if err != nil {
			return nil, err
		}
		if next.TableUUID() != base.TableUUID() {
			return nil, fmt.Errorf("cannot reassign table uuid %s to %s: assign-uuid is only valid when a table is created", base.TableUUID(), next.TableUUID())
		}
		return next, nil
	}
	version := 2
	for _, u := range updates {
		if u.Action() == table.UpdateUpgradeFormatVersion {
			version = 1
			break
		}
	}
	b, err := table.NewMetadataBuilder(version)
	if err != nil {
		return nil, err
	}
	if err := b.SetUUID(uuid.New()); err != nil {
		return nil, err
	}
	for _, u := range updates {
		if err := u.Apply(b); err != nil {
			return nil, err
		}
	}
	return b.Build()
}

// deleteOldMetadata removes metadata files that dropped out of the metadata
// log when write.metadata.delete-after-commit.enabled is true (the log is
// trimmed to write.metadata.previous-versions-max by the builder), as Java's
// and iceberg-go's own catalogs do after a commit.
func (c *Catalog) deleteOldMetadata(ctx context.Context, wh *Warehouse, id Ident, base, next table.Metadata) {
	if !next.Properties().GetBool(table.MetadataDeleteAfterCommitEnabledKey, table.MetadataDeleteAfterCommitEnabledDefault) {
		return
	}
	kept := map[string]bool{}
	for e := range next.PreviousFiles() {
		kept[e.MetadataFile] = true
	}
	var drop []string
	for e := range base.PreviousFiles() {
		if !kept[e.MetadataFile] && wh.Contains(e.MetadataFile) && storage.Within(e.MetadataFile, next.Location()) {
			drop = append(drop, e.MetadataFile)
		}
	}
	if len(drop) == 0 {
		return
	}
	// A table registered from this one's metadata shares these files; as
	// for purge, nothing is deleted then.
	if other, shared, err := c.sharedLocation(ctx, next.Location(), id); err != nil || shared {
		c.log.Warn("keep old metadata files: the location may be shared", "location", next.Location(), "shared_with", other.String(), "err", err)
		return
	}
	for _, f := range drop {
		if err := wh.Remove(ctx, f); err != nil {
			c.log.Warn("delete old metadata file", "location", f, "err", err)
		}
	}
}
