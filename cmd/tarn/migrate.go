package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/catalog/postgres"
)

func newMigrateCmd() *cobra.Command {
	var from, to, dataDir string
	cmd := &cobra.Command{
		Use:   "migrate --from bolt --to postgres://...",
		Short: "Copy a bbolt catalog (tarn.db) into an empty PostgreSQL store",
		Long: `Copy the catalog state of --data-dir's tarn.db into the empty PostgreSQL
database of --to: namespaces, table and view pointers (with the directories
their files are written under), Idempotency-Key responses and every record
collection (topics, principals, roles, grants, the token signing key, staged
tables, publishing progress). Table files stay where they are: serve the
same --warehouse with --store set to the same URL afterwards.

Stop the tarn that uses the data dir first: a tarn.db a running tarn holds
is refused, and so is a database that holds any catalog state.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from != storeBolt {
				return fmt.Errorf("--from must be %q (the bbolt file in --data-dir), got %q", storeBolt, from)
			}
			if !isPostgresURL(to) {
				return fmt.Errorf("--to must be a postgres://user:password@host:port/database URL, got %q", redactURL(to))
			}
			return migrateBolt(cmd.Context(), dataDir, to, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", storeBolt, `store to copy from: "bolt" (tarn.db in --data-dir)`)
	f.StringVar(&to, "to", "", "PostgreSQL store to copy into (an empty database; the schema is created)")
	f.StringVar(&dataDir, "data-dir", defaultDataDir, "data directory of the bbolt store")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// migrateCounts is what migrateBolt copied.
type migrateCounts struct {
	namespaces, tables, views, directories, idempotency int
	records                                             map[string]int
	collections                                         []string
}

// migrateBolt copies the bbolt store of dataDir into the PostgreSQL
// store of url and prints the counts to out. Errors: no tarn.db in
// dataDir; the file is in use (bolt.InUseError); the target is not
// empty; any read or write (the target then holds part of the copy:
// empty it, or take a new database, and run again).
func migrateBolt(ctx context.Context, dataDir, url string, out io.Writer) error {
	if _, err := os.Stat(filepath.Join(dataDir, bolt.FileName)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--data-dir %s holds no %s", dataDir, bolt.FileName)
	}
	src, err := bolt.Open(dataDir)
	if err != nil {
		return dataDirError(dataDir, err)
	}
	defer src.Close()
	dst, err := postgres.Open(ctx, url)
	if err != nil {
		return fmt.Errorf("--to %s: %w", redactURL(url), err)
	}
	defer dst.Close()
	empty, err := dst.Empty(ctx)
	if err != nil {
		return fmt.Errorf("--to %s: %w", redactURL(url), err)
	}
	if !empty {
		return fmt.Errorf("--to %s already holds catalog state: migrate into an empty database (or schema, with search_path)", redactURL(url))
	}
	n, err := copyStore(ctx, src, dst)
	if err != nil {
		return fmt.Errorf("migrate %s to %s (the database now holds part of the copy: empty it before running again): %w",
			filepath.Join(dataDir, bolt.FileName), redactURL(url), err)
	}
	fmt.Fprintf(out, "migrated %s to %s\n", filepath.Join(dataDir, bolt.FileName), redactURL(url))
	fmt.Fprintf(out, "namespaces\t%d\ntables\t%d\nviews\t%d\ndirectories\t%d\nidempotency-keys\t%d\n",
		n.namespaces, n.tables, n.views, n.directories, n.idempotency)
	for _, c := range n.collections {
		fmt.Fprintf(out, "records %s\t%d\n", c, n.records[c])
	}
	return nil
}

// copyStore copies everything of src into dst: namespaces parents
// first, then every namespace's tables and views (a create of the same
// pointer: the version starts again at 1, which only compare-and-swap
// reads), the Idempotency-Key responses and the records.
func copyStore(ctx context.Context, src *bolt.Store, dst *postgres.Store) (migrateCounts, error) {
	n := migrateCounts{records: map[string]int{}}
	var walk func(parent catalog.Namespace) error
	walk = func(parent catalog.Namespace) error {
		children, _, err := src.ListNamespaces(ctx, parent, catalog.Page{})
		if err != nil {
			return fmt.Errorf("list namespaces of %v: %w", parent, err)
		}
		for _, ns := range children {
			props, err := src.LoadNamespace(ctx, ns)
			if err != nil {
				return err
			}
			if err := dst.CreateNamespace(ctx, ns, props); err != nil {
				return fmt.Errorf("namespace %v: %w", ns, err)
			}
			n.namespaces++
			for _, kind := range []catalog.Kind{catalog.KindTable, catalog.KindView} {
				ids, _, err := src.ListPointers(ctx, ns, kind, catalog.Page{})
				if err != nil {
					return err
				}
				for _, id := range ids {
					p, err := src.LoadPointer(ctx, id, kind)
					if err != nil {
						return err
					}
					locs := catalog.PointerLocations(p)
					if err := dst.CommitPointers(ctx, []catalog.PointerChange{{Ident: id, Kind: kind, MetadataLocation: p.MetadataLocation, Locations: locs}}); err != nil {
						return fmt.Errorf("%s %s: %w", kind, id, err)
					}
					n.directories += len(locs)
					if kind == catalog.KindTable {
						n.tables++
					} else {
						n.views++
					}
				}
			}
			if err := walk(ns); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(nil); err != nil {
		return n, err
	}
	idem, err := src.IdempotencyRecords(ctx)
	if err != nil {
		return n, err
	}
	for k, rec := range idem {
		if err := dst.SaveIdempotencyRecord(ctx, k, rec); err != nil {
			return n, fmt.Errorf("idempotency record %s: %w", k, err)
		}
		n.idempotency++
	}
	if n.collections, err = src.RecordCollections(ctx); err != nil {
		return n, err
	}
	for _, c := range n.collections {
		recs, err := src.ListRecords(ctx, c)
		if err != nil {
			return n, err
		}
		for k, v := range recs {
			if err := dst.PutRecord(ctx, c, k, v); err != nil {
				return n, fmt.Errorf("record %s/%s: %w", c, k, err)
			}
			n.records[c]++
		}
	}
	return n, nil
}
