package publish

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/tarnhq/tarn/catalog"
)

// Glue table parameters of an Iceberg table, as Apache Iceberg's
// GlueCatalog (iceberg-aws) and pyiceberg's write and read them.
const (
	glueTableType        = "table_type"
	glueIceberg          = "ICEBERG"
	glueMetadataLocation = "metadata_location"
	gluePrevious         = "previous_metadata_location"
)

// GlueAPI is what the glue target calls of the AWS Glue client
// (*glue.Client); tests put a double with Glue's VersionId check in
// between (moto ignores VersionId).
type GlueAPI interface {
	CreateDatabase(ctx context.Context, in *glue.CreateDatabaseInput, opts ...func(*glue.Options)) (*glue.CreateDatabaseOutput, error)
	GetTable(ctx context.Context, in *glue.GetTableInput, opts ...func(*glue.Options)) (*glue.GetTableOutput, error)
	CreateTable(ctx context.Context, in *glue.CreateTableInput, opts ...func(*glue.Options)) (*glue.CreateTableOutput, error)
	UpdateTable(ctx context.Context, in *glue.UpdateTableInput, opts ...func(*glue.Options)) (*glue.UpdateTableOutput, error)
	DeleteTable(ctx context.Context, in *glue.DeleteTableInput, opts ...func(*glue.Options)) (*glue.DeleteTableOutput, error)
}

// Glue publishes to the AWS Glue Data Catalog: one Glue database per
// namespace and one Glue table per table (GlueName), with table_type
// ICEBERG, metadata_location, previous_metadata_location, the table
// location and the column list (gluenames.go) — what Athena, Redshift
// Spectrum, EMR and pyiceberg's and Iceberg's GlueCatalog read.
//
// Every write is checked first: the Glue table must be the one Tarn last
// wrote (its VersionId and metadata_location as recorded), and the
// update is conditional on the VersionId read (UpdateTable VersionId,
// with SkipArchive: Tarn's metadata log is the history, Glue's table
// versions would only fill the account's version quota). A table changed
// by someone else is never overwritten: Publish returns ErrConflict.
type Glue struct {
	api       GlueAPI
	catalogID *string
}

// NewGlue builds the glue target of cfg: credentials from the AWS
// default chain (environment, shared config, web identity, instance
// role), or assumed from cfg.RoleARN with them; cfg.Region and
// cfg.Endpoint override the chain's region and Glue's endpoint.
func NewGlue(ctx context.Context, cfg TargetConfig) (*Glue, error) {
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("publish target %s: load the AWS configuration: %w", cfg.Name, err)
	}
	if cfg.RoleARN != "" {
		stsClient := sts.NewFromConfig(awsCfg, func(o *sts.Options) {
			if cfg.STSEndpoint != "" {
				o.BaseEndpoint = aws.String(cfg.STSEndpoint)
			}
		})
		awsCfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient, cfg.RoleARN,
			func(o *stscreds.AssumeRoleOptions) { o.RoleSessionName = "tarn-publish-" + cfg.Name }))
	}
	client := glue.NewFromConfig(awsCfg, func(o *glue.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return NewGlueWith(client, cfg), nil
}

// NewGlueWith is the glue target of cfg over api.
func NewGlueWith(api GlueAPI, cfg TargetConfig) *Glue {
	g := &Glue{api: api}
	if cfg.CatalogID != "" {
		g.catalogID = aws.String(cfg.CatalogID)
	}
	return g
}

// Name is id's "database.table" in Glue (GlueName).
func (g *Glue) Name(id catalog.Ident) (string, error) {
	db, name, err := GlueName(id)
	if err != nil {
		return "", err
	}
	return db + "." + name, nil
}

// Publish creates or updates id's Glue table to point at tbl's metadata
// and returns its name and VersionId. Errors: ErrConflict when the Glue
// table is not the one Tarn last wrote (check); Glue's (retried).
func (g *Glue) Publish(ctx context.Context, id catalog.Ident, tbl *table.Table, last Record) (string, string, error) {
	db, name, err := GlueName(id)
	if err != nil {
		return "", "", err
	}
	remote := db + "." + name
	cur, err := g.get(ctx, db, name)
	if err != nil {
		return "", "", err
	}
	if cur == nil {
		prev := ""
		if last.Remote == remote {
			prev = last.MetadataLocation // re-created after a drop in Glue
		}
		if err := g.create(ctx, db, id, g.tableInput(id, name, tbl, prev, nil)); err != nil {
			return "", "", err
		}
	} else {
		if err := check(remote, id, tbl, cur, last); err != nil {
			return "", "", err
		}
		_, err := g.api.UpdateTable(ctx, &glue.UpdateTableInput{CatalogId: g.catalogID, DatabaseName: aws.String(db),
			TableInput: g.tableInput(id, name, tbl, cur.Parameters[glueMetadataLocation], cur.Parameters),
			VersionId:  cur.VersionId, SkipArchive: aws.Bool(true)})
		var cme *types.ConcurrentModificationException
		if errors.As(err, &cme) {
			return "", "", fmt.Errorf("glue table %s changed while Tarn updated it (VersionId %s); retrying: %w", remote, aws.ToString(cur.VersionId), err)
		}
		if err != nil {
			return "", "", fmt.Errorf("glue UpdateTable %s: %w", remote, err)
		}
	}
	after, err := g.get(ctx, db, name)
	if err != nil {
		return "", "", err
	}
	if after == nil || after.Parameters[glueMetadataLocation] != tbl.MetadataLocation() {
		// Changed again right after Tarn's write: the next attempt's
		// check decides whose it is.
		return "", "", fmt.Errorf("glue table %s does not hold Tarn's write after it", remote)
	}
	if last.Remote != "" && last.Remote != remote {
		// A rename: the table under the old name goes once the new one
		// exists (Glue cannot rename a table).
		if _, err := g.Remove(ctx, last); err != nil {
			return "", "", fmt.Errorf("remove %s after the rename to %s: %w", last.Remote, remote, err)
		}
	}
	return remote, aws.ToString(after.VersionId), nil
}

// check decides whether the Glue table cur may be updated with tbl's
// pointer: nil when it is the one Tarn last wrote, or holds a write of
// Tarn's that was not recorded (a crash between the write and the
// record), or when the operator chose to take it over (last.TakeOver);
// otherwise an ErrConflict saying what differs.
func check(remote string, id catalog.Ident, tbl *table.Table, cur *types.Table, last Record) error {
	if last.TakeOver {
		return nil
	}
	m := cur.Parameters[glueMetadataLocation]
	if !strings.EqualFold(cur.Parameters[glueTableType], glueIceberg) {
		return conflictf("the Glue table %s exists and is not an Iceberg table (table_type %q)", remote, cur.Parameters[glueTableType])
	}
	hist := history(tbl)
	at := slices.Index(hist, m)
	if last.Remote == remote && last.MetadataLocation != "" {
		v := aws.ToString(cur.VersionId)
		if v == last.RemoteVersion && m == last.MetadataLocation {
			return nil
		}
		// Tarn's unrecorded update: a newer metadata file of this table,
		// with the recorded one as its previous.
		if at >= 0 && at > slices.Index(hist, last.MetadataLocation) && cur.Parameters[gluePrevious] == last.MetadataLocation {
			return nil
		}
		return conflictf("the Glue table %s was changed outside Tarn: VersionId %s (Tarn's last write: %s), metadata_location %s (Tarn published %s)",
			remote, v, last.RemoteVersion, m, last.MetadataLocation)
	}
	// No record under this name: Tarn's when it points at one of this
	// table's metadata files (a create whose record was lost).
	if at >= 0 {
		return nil
	}
	return conflictf("the Glue table %s exists and does not point at a metadata file of %s (metadata_location %s)", remote, id, m)
}

// tableInput is the Glue table of tbl: prev is the metadata file Glue
// pointed at before (empty on create); params are the Glue table's
// parameters, kept but for the Iceberg ones.
func (g *Glue) tableInput(id catalog.Ident, name string, tbl *table.Table, prev string, params map[string]string) *types.TableInput {
	p := maps.Clone(params)
	if p == nil {
		p = map[string]string{}
	}
	p[glueTableType], p[glueMetadataLocation] = glueIceberg, tbl.MetadataLocation()
	delete(p, gluePrevious)
	if prev != "" && prev != tbl.MetadataLocation() {
		p[gluePrevious] = prev
	}
	md := tbl.Metadata()
	return &types.TableInput{
		Name:        aws.String(name),
		TableType:   aws.String("EXTERNAL_TABLE"),
		Description: aws.String("Iceberg table " + id.String() + ", published by Tarn"),
		Parameters:  p,
		StorageDescriptor: &types.StorageDescriptor{
			Location: aws.String(md.Location()),
			Columns:  glueColumns(md.CurrentSchema()),
		},
	}
}

// get returns the Glue table db.name, nil when there is none.
func (g *Glue) get(ctx context.Context, db, name string) (*types.Table, error) {
	out, err := g.api.GetTable(ctx, &glue.GetTableInput{CatalogId: g.catalogID, DatabaseName: aws.String(db), Name: aws.String(name)})
	var nf *types.EntityNotFoundException
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("glue GetTable %s.%s: %w", db, name, err)
	}
	return out.Table, nil
}

// create creates the Glue table, and its database when missing.
func (g *Glue) create(ctx context.Context, db string, id catalog.Ident, in *types.TableInput) error {
	mk := func() error {
		_, err := g.api.CreateTable(ctx, &glue.CreateTableInput{CatalogId: g.catalogID, DatabaseName: aws.String(db), TableInput: in})
		return err
	}
	err := mk()
	var nf *types.EntityNotFoundException
	if errors.As(err, &nf) {
		_, derr := g.api.CreateDatabase(ctx, &glue.CreateDatabaseInput{CatalogId: g.catalogID, DatabaseInput: &types.DatabaseInput{
			Name: aws.String(db), Description: aws.String("Tarn namespace " + id.Namespace.String())}})
		var ae *types.AlreadyExistsException
		if derr != nil && !errors.As(derr, &ae) {
			return fmt.Errorf("glue CreateDatabase %s: %w", db, derr)
		}
		err = mk()
	}
	if err != nil {
		return fmt.Errorf("glue CreateTable %s.%s: %w", db, aws.ToString(in.Name), err)
	}
	return nil
}

// Remove deletes the Glue table last.Remote if it still points at
// last.MetadataLocation; removed is false when it was gone or changed
// outside Tarn (then it is left).
func (g *Glue) Remove(ctx context.Context, last Record) (removed bool, err error) {
	db, name, ok := strings.Cut(last.Remote, ".")
	if !ok {
		return false, fmt.Errorf("glue: bad remote name %q", last.Remote)
	}
	cur, err := g.get(ctx, db, name)
	if err != nil || cur == nil {
		return false, err
	}
	if cur.Parameters[glueMetadataLocation] != last.MetadataLocation {
		return false, nil
	}
	_, err = g.api.DeleteTable(ctx, &glue.DeleteTableInput{CatalogId: g.catalogID, DatabaseName: aws.String(db), Name: aws.String(name)})
	var nf *types.EntityNotFoundException
	if errors.As(err, &nf) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("glue DeleteTable %s: %w", last.Remote, err)
	}
	return true, nil
}
