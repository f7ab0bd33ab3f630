package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/delta"
)

// Unity table properties Tarn sets on the tables it creates: they say
// whose the table is, so that a write Tarn made but could not record (a
// crash in between) is recognised as Tarn's.
const (
	unityPropTable = "tarn.table"
	unityPropUUID  = "tarn.iceberg.table-uuid"
)

// unityAPI is the path of Unity Catalog's REST API under the server's URI
// (the OSS server and Databricks workspaces alike; OpenAPI document
// api/all.yaml of github.com/unitycatalog/unitycatalog).
const unityAPI = "/api/2.1/unity-catalog"

// Unity publishes the Delta view of Tarn's tables (docs/delta.md: the
// Delta log Tarn writes beside a table with tarn.delta.enabled=true) to
// Unity Catalog, as an EXTERNAL table with data_source_format DELTA, the
// Delta root as storage_location and the columns of the Delta schema.
// One Unity schema per namespace (UnityName) in the configured catalog.
//
// Unity's API has no Iceberg pointer and no conditional update of a
// table (the OSS API has POST /tables, GET and DELETE /tables/{full_name}
// only): readers read the Delta log at the storage location, so the
// location is the pointer, and it does not move between commits. A
// schema change replaces the Unity table (DELETE, then POST with the new
// columns: an EXTERNAL table's delete removes the entry, never the
// files). A table is Tarn's when its table_id is the one Tarn recorded,
// or it has Tarn's storage location and tarn.iceberg.table-uuid (a
// create whose record was lost); anything else is ErrConflict and is
// never deleted. An Iceberg-only table (no Delta view) is ErrNotDelta.
type Unity struct {
	cfg  TargetConfig
	base string
	http *http.Client
}

// NewUnity returns the unity target of cfg: cfg.URI is the server's base
// URI (the client adds /api/2.1/unity-catalog), cfg.Token the bearer
// token sent with every call (a Databricks personal access token or
// OAuth token; none for an OSS server without auth), cfg.Catalog the
// Unity catalog the tables go into (it must exist).
func NewUnity(cfg TargetConfig) *Unity {
	return &Unity{cfg: cfg, base: strings.TrimRight(cfg.URI, "/") + unityAPI, http: &http.Client{Timeout: 30 * time.Second}}
}

// UnityName maps a Tarn identifier to its Unity schema and table: the
// same mapping as GlueName (lower case, every character but a-z, 0-9 and
// '_' becomes '_', nested namespace levels joined with '_'), which keeps
// names Unity and its SQL engines take unquoted. Errors: ErrConflict for
// a name that maps to "" or more than 255 characters.
func UnityName(id catalog.Ident) (schema, name string, err error) {
	schema, name, err = GlueName(id)
	if err != nil {
		return "", "", fmt.Errorf("unity: %w", err)
	}
	return schema, name, nil
}

// Name is id's "catalog.schema.table" in Unity.
func (u *Unity) Name(id catalog.Ident) (string, error) {
	schema, name, err := UnityName(id)
	if err != nil {
		return "", err
	}
	return u.cfg.Catalog + "." + schema + "." + name, nil
}

// unityColumn is Unity's ColumnInfo.
type unityColumn struct {
	Name          string `json:"name"`
	TypeText      string `json:"type_text"`
	TypeJSON      string `json:"type_json"`
	TypeName      string `json:"type_name"`
	TypePrecision *int   `json:"type_precision,omitempty"`
	TypeScale     *int   `json:"type_scale,omitempty"`
	Position      int    `json:"position"`
	Nullable      bool   `json:"nullable"`
}

// unityTable is Unity's CreateTable request and TableInfo answer (the
// fields Tarn reads or writes).
type unityTable struct {
	Name             string            `json:"name"`
	CatalogName      string            `json:"catalog_name"`
	SchemaName       string            `json:"schema_name"`
	TableType        string            `json:"table_type"`
	DataSourceFormat string            `json:"data_source_format"`
	Columns          []unityColumn     `json:"columns"`
	StorageLocation  string            `json:"storage_location"`
	Comment          string            `json:"comment,omitempty"`
	Properties       map[string]string `json:"properties,omitempty"`
	TableID          string            `json:"table_id,omitempty"`
}

// UnityError is an answer of Unity's API other than 2xx: the HTTP status
// and the error body ({"error_code": "NOT_FOUND", "message": ...}, as the
// OSS server and Databricks send it).
type UnityError struct {
	Status    int    `json:"-"`
	ErrorCode string `json:"error_code"`
	Message   string `json:"message"`
}

func (e *UnityError) Error() string {
	return fmt.Sprintf("unity: HTTP %d %s: %s", e.Status, e.ErrorCode, e.Message)
}

func isStatus(err error, status int) bool {
	var ue *UnityError
	return errors.As(err, &ue) && ue.Status == status
}

// do sends one call: in as the JSON body (nil: none), the answer decoded
// into out (nil: discarded). Errors: *UnityError for a non-2xx answer,
// the transport's.
func (u *Unity) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if u.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+u.cfg.Token)
	}
	rsp, err := u.http.Do(req)
	if err != nil {
		return fmt.Errorf("unity %s %s: %w", method, path, err)
	}
	defer rsp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(rsp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("unity %s %s: %w", method, path, err)
	}
	if rsp.StatusCode/100 != 2 {
		ue := &UnityError{Status: rsp.StatusCode}
		if json.Unmarshal(b, ue) != nil || ue.Message == "" {
			ue.Message = strings.TrimSpace(string(b[:min(len(b), 512)]))
		}
		return fmt.Errorf("%s %s: %w", method, path, ue)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("unity %s %s: decode the answer: %w", method, path, err)
		}
	}
	return nil
}

// get returns the Unity table full (catalog.schema.table), nil when there
// is none.
func (u *Unity) get(ctx context.Context, full string) (*unityTable, error) {
	var t unityTable
	err := u.do(ctx, http.MethodGet, "/tables/"+url.PathEscape(full), nil, &t)
	if isStatus(err, http.StatusNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// view is the Delta view of tbl as Unity gets it. Errors: ErrNotDelta
// for a table without tarn.delta.enabled=true; a retried error while the
// Delta publisher has not written the first version yet (it records the
// root in tarn.delta.location once the log exists).
func (u *Unity) view(id catalog.Ident, tbl *table.Table, schema, name string) (*unityTable, error) {
	props := tbl.Properties()
	if !delta.Enabled(props) {
		return nil, fmt.Errorf("%w: %s has no Delta view (set %s=true, or enable the topic with --delta); Unity Catalog has no route for an Iceberg table's pointer",
			ErrNotDelta, id, delta.PropEnabled)
	}
	root := props[delta.PropLocation]
	if root == "" {
		return nil, fmt.Errorf("unity: the Delta log of %s is not written yet (no %s); retrying", id, delta.PropLocation)
	}
	cols, _ := delta.Columns(tbl.Schema())
	t := &unityTable{Name: name, CatalogName: u.cfg.Catalog, SchemaName: schema, TableType: "EXTERNAL", DataSourceFormat: "DELTA",
		StorageLocation: root, Comment: "Delta view of the Iceberg table " + id.String() + ", published by Tarn",
		Properties: map[string]string{unityPropTable: catalog.FormatIdent(id), unityPropUUID: tbl.Metadata().TableUUID().String()}}
	for i, c := range cols {
		uc, err := unityColumnOf(c, i)
		if err != nil {
			return nil, err
		}
		t.Columns = append(t.Columns, uc)
	}
	return t, nil
}

// Publish creates id's Unity table from tbl's Delta view, or replaces it
// when its columns or location differ (see Unity), and returns its full
// name and table_id. Errors: ErrNotDelta for an Iceberg-only table;
// ErrConflict when the Unity table is not Tarn's; Unity's (retried).
func (u *Unity) Publish(ctx context.Context, id catalog.Ident, tbl *table.Table, last Record) (string, string, error) {
	schema, name, err := UnityName(id)
	if err != nil {
		return "", "", err
	}
	remote := u.cfg.Catalog + "." + schema + "." + name
	want, err := u.view(id, tbl, schema, name)
	if err != nil {
		return "", "", err
	}
	cur, err := u.get(ctx, remote)
	if err != nil {
		return "", "", err
	}
	switch {
	case cur == nil:
		if err := u.ensureSchema(ctx, schema, id); err != nil {
			return "", "", err
		}
		if cur, err = u.create(ctx, remote, want); err != nil {
			return "", "", err
		}
	default:
		if err := u.check(remote, want, cur, last); err != nil {
			return "", "", err
		}
		if !sameView(cur, want) {
			// Unity has no update of a table's columns or location: the
			// entry is replaced (an EXTERNAL table's files stay).
			if err := u.delete(ctx, remote); err != nil {
				return "", "", err
			}
			if cur, err = u.create(ctx, remote, want); err != nil {
				return "", "", err
			}
		}
	}
	if last.Remote != "" && last.Remote != remote {
		// A rename: the old name goes once the new one exists, if it is
		// still Tarn's.
		if _, err := u.Remove(ctx, last); err != nil {
			return "", "", fmt.Errorf("remove %s after the rename to %s: %w", last.Remote, remote, err)
		}
	}
	return remote, cur.TableID, nil
}

// check decides whether the Unity table cur may be kept or replaced by
// Tarn: nil when it is the one Tarn last wrote (its table_id as
// recorded), or carries Tarn's storage location and table uuid (a write
// of Tarn's whose record was lost), or the operator chose to take it
// over; otherwise an ErrConflict saying what differs.
func (u *Unity) check(remote string, want, cur *unityTable, last Record) error {
	if last.TakeOver {
		return nil
	}
	if last.Remote == remote && last.RemoteVersion != "" && cur.TableID == last.RemoteVersion {
		return nil
	}
	if strings.TrimSuffix(cur.StorageLocation, "/") == strings.TrimSuffix(want.StorageLocation, "/") &&
		cur.Properties[unityPropUUID] == want.Properties[unityPropUUID] {
		return nil
	}
	if last.Remote == remote && last.RemoteVersion != "" {
		return conflictf("the Unity table %s was changed outside Tarn: table_id %s (Tarn's: %s), storage_location %s (Tarn's: %s)",
			remote, cur.TableID, last.RemoteVersion, cur.StorageLocation, want.StorageLocation)
	}
	return conflictf("the Unity table %s exists and is not Tarn's Delta view of %s (storage_location %s, Tarn's: %s)",
		remote, want.Properties[unityPropTable], cur.StorageLocation, want.StorageLocation)
}

// sameView reports whether cur already is want: the same format, type,
// location and columns.
func sameView(cur, want *unityTable) bool {
	if cur.TableType != want.TableType || cur.DataSourceFormat != want.DataSourceFormat ||
		strings.TrimSuffix(cur.StorageLocation, "/") != strings.TrimSuffix(want.StorageLocation, "/") {
		return false
	}
	return slices.EqualFunc(cur.Columns, want.Columns, func(a, b unityColumn) bool {
		return a.Name == b.Name && a.TypeText == b.TypeText && a.Nullable == b.Nullable && a.Position == b.Position
	})
}

// create creates the Unity table. A table created there meanwhile (409)
// is retried: the next attempt's check decides whose it is.
func (u *Unity) create(ctx context.Context, remote string, t *unityTable) (*unityTable, error) {
	var out unityTable
	if err := u.do(ctx, http.MethodPost, "/tables", t, &out); err != nil {
		return nil, fmt.Errorf("unity create table %s at %s: %w", remote, t.StorageLocation, err)
	}
	if out.TableID == "" {
		return nil, fmt.Errorf("unity create table %s: the answer has no table_id", remote)
	}
	return &out, nil
}

func (u *Unity) delete(ctx context.Context, remote string) error {
	err := u.do(ctx, http.MethodDelete, "/tables/"+url.PathEscape(remote), nil, nil)
	if err != nil && !isStatus(err, http.StatusNotFound) {
		return fmt.Errorf("unity delete table %s: %w", remote, err)
	}
	return nil
}

// ensureSchema creates the Unity schema of id's namespace when missing
// (never dropped by Tarn). The catalog must exist.
func (u *Unity) ensureSchema(ctx context.Context, schema string, id catalog.Ident) error {
	full := u.cfg.Catalog + "." + schema
	err := u.do(ctx, http.MethodGet, "/schemas/"+url.PathEscape(full), nil, nil)
	if err == nil {
		return nil
	}
	if !isStatus(err, http.StatusNotFound) {
		return fmt.Errorf("unity schema %s: %w", full, err)
	}
	err = u.do(ctx, http.MethodPost, "/schemas", map[string]string{"name": schema, "catalog_name": u.cfg.Catalog,
		"comment": "Tarn namespace " + id.Namespace.String()}, nil)
	if err != nil && !isStatus(err, http.StatusConflict) {
		return fmt.Errorf("unity create schema %s: %w", full, err)
	}
	return nil
}

// Remove deletes the Unity table last.Remote (an EXTERNAL table: the
// entry only, Tarn's files stay) if it is still the one Tarn wrote (its
// table_id as recorded); removed is false when it was gone or changed
// outside Tarn (then it is left).
func (u *Unity) Remove(ctx context.Context, last Record) (removed bool, err error) {
	cur, err := u.get(ctx, last.Remote)
	if err != nil || cur == nil {
		return false, err
	}
	if cur.TableID != last.RemoteVersion {
		return false, nil
	}
	err = u.do(ctx, http.MethodDelete, "/tables/"+url.PathEscape(last.Remote), nil, nil)
	if isStatus(err, http.StatusNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("unity delete table %s: %w", last.Remote, err)
	}
	return true, nil
}
