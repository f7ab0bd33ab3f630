package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/offsets"
	"github.com/tarnhq/tarn/spec"
)

// unitSeparator joins namespace levels in console paths, as the REST
// spec does in its own ({namespace} is the levels joined by %1F).
const unitSeparator = "\x1f"

func joinLevels(ns []string) string { return strings.Join(ns, unitSeparator) }

// namespacesPerPage is how many namespaces a catalog page shows, each
// with its tables and views (two API requests per namespace): a page
// stays fast whatever the catalog holds; the links page on.
const namespacesPerPage = 100

// listPageSize is the pageSize the console asks the API's lists for; it
// follows next-page-token until the list ends.
const listPageSize = 1000

// nsEntry is one namespace of the catalog page.
type nsEntry struct {
	Key    string // the levels as a JSON array: unique, for scripts and tests
	Levels []string
	Tables []link
	Views  []link
}

type link struct{ Name, URL string }

type catalogData struct {
	Namespaces []nsEntry
	// Page is 1-based; First and Last number the namespaces shown, of
	// Total; Prev and Next link the neighbouring pages (empty: none).
	Page, First, Last, Total int
	Prev, Next               string
}

// listPages sends GET path (without a query, or with one) with
// pageToken and pageSize, following next-page-token to the end, and
// hands each page to add (spec: parameters/page-token).
func listPages[T any](ctx context.Context, api apiClient, path string, next func(T) *string, add func(T)) error {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	token := ""
	for {
		var resp T
		q := fmt.Sprintf("%s%spageSize=%d&pageToken=%s", path, sep, listPageSize, url.QueryEscape(token))
		if err := api.do(ctx, http.MethodGet, q, nil, &resp); err != nil {
			return err
		}
		add(resp)
		t := next(resp)
		if t == nil || *t == "" || *t == token {
			return nil
		}
		token = *t
	}
}

// namespaces lists every namespace the principal may see, parents
// before children, through GET /v1/namespaces?parent= (each list paged).
func (c *Console) namespaces(ctx context.Context, api apiClient) ([][]string, error) {
	var out [][]string
	queue := [][]string{nil}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		path := "/v1/namespaces"
		if parent != nil {
			path += "?parent=" + url.QueryEscape(joinLevels(parent))
		}
		var level [][]string
		err := listPages(ctx, api, path, func(r spec.ListNamespacesResponse) *string { return r.NextPageToken },
			func(r spec.ListNamespacesResponse) { level = append(level, r.Namespaces...) })
		if err != nil {
			return nil, err
		}
		slices.SortFunc(level, func(a, b []string) int { return slices.Compare(a, b) })
		out = append(out, level...)
		queue = append(queue, level...)
	}
	return out, nil
}

// idents lists namespace ns's tables or views (kind), by name.
func idents(ctx context.Context, api apiClient, ns []string, kind string) ([]spec.TableIdentifier, error) {
	var out []spec.TableIdentifier
	err := listPages(ctx, api, "/v1/namespaces/"+nsPath(ns)+"/"+kind, func(r spec.ListTablesResponse) *string { return r.NextPageToken },
		func(r spec.ListTablesResponse) { out = append(out, r.Identifiers...) })
	slices.SortFunc(out, func(a, b spec.TableIdentifier) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}

func (c *Console) catalogPage(w http.ResponseWriter, r *http.Request) {
	api, ctx := c.api(r), r.Context()
	all, err := c.namespaces(ctx, api)
	if err != nil {
		c.fail(w, r, err, "")
		return
	}
	slices.SortFunc(all, func(a, b []string) int { return slices.Compare(a, b) })
	d := catalogData{Page: 1, Total: len(all)}
	if s := r.URL.Query().Get("page"); s != "" {
		if d.Page, err = strconv.Atoi(s); err != nil || d.Page < 1 {
			c.fail(w, r, &APIError{Status: http.StatusBadRequest}, fmt.Sprintf("Page %q is not a page number.", s))
			return
		}
	}
	from := min((d.Page-1)*namespacesPerPage, len(all))
	to := min(from+namespacesPerPage, len(all))
	d.First, d.Last = from+1, to
	if d.Page > 1 {
		d.Prev = fmt.Sprintf("%s/catalog?page=%d", Prefix, d.Page-1)
	}
	if to < len(all) {
		d.Next = fmt.Sprintf("%s/catalog?page=%d", Prefix, d.Page+1)
	}
	for _, ns := range all[from:to] {
		key, _ := json.Marshal(ns) // strings only: cannot fail
		e := nsEntry{Key: string(key), Levels: ns}
		for _, kind := range []string{"tables", "views"} {
			ids, err := idents(ctx, api, ns, kind)
			if err != nil {
				c.fail(w, r, err, "")
				return
			}
			for _, id := range ids {
				ident := catalog.Ident{Namespace: id.Namespace, Name: id.Name}
				if kind == "views" {
					e.Views = append(e.Views, link{Name: id.Name, URL: viewURL(ident)})
				} else {
					e.Tables = append(e.Tables, link{Name: id.Name, URL: tableURL(ident)})
				}
			}
		}
		d.Namespaces = append(d.Namespaces, e)
	}
	c.render(w, r, http.StatusOK, "catalog", page{Title: "Catalog", Nav: "catalog", Data: d})
}

func viewURL(id catalog.Ident) string {
	return Prefix + "/namespaces/" + url.PathEscape(joinLevels(id.Namespace)) + "/views/" + url.PathEscape(id.Name)
}

// identOf reads the {namespace} and {name} of a console path.
func identOf(r *http.Request, name string) catalog.Ident {
	return catalog.Ident{Namespace: strings.Split(r.PathValue("namespace"), unitSeparator), Name: r.PathValue(name)}
}

// fieldRow is one field of a schema, nested fields after their parent.
type fieldRow struct {
	ID       int
	Path     string // dotted, for the title
	Name     string
	Depth    int
	Type     string
	Required bool
	Doc      string
}

// fieldRows flattens fields (struct fields, list elements, map keys
// and values) depth first.
func fieldRows(fields []iceberg.NestedField, prefix string, depth int) []fieldRow {
	var out []fieldRow
	for _, f := range fields {
		path := f.Name
		if prefix != "" {
			path = prefix + "." + f.Name
		}
		typ := f.Type.String()
		nested, ok := f.Type.(iceberg.NestedType)
		if ok {
			typ = f.Type.Type()
		}
		out = append(out, fieldRow{ID: f.ID, Path: path, Name: f.Name, Depth: depth, Type: typ, Required: f.Required, Doc: f.Doc})
		if ok {
			out = append(out, fieldRows(nested.Fields(), path, depth+1)...)
		}
	}
	return out
}

type partitionRow struct {
	FieldID   int
	Name      string
	Transform string
	Source    string
}

type snapshotRow struct {
	ID, Parent   int64
	HasParent    bool
	Sequence     int64
	Time         time.Time
	Operation    string
	SchemaID     *int
	Summary      []kv
	Kafka        *offsets.Offsets
	KafkaParts   []kv
	KafkaInvalid string
	Current      bool
}

type kv struct{ Key, Value string }

type schemaRow struct {
	ID      int
	Fields  int
	Current bool
}

type tableData struct {
	Ident            catalog.Ident
	Name             string // catalog.FormatIdent text
	MetadataLocation string
	Location         string
	UUID             string
	FormatVersion    int
	LastUpdated      time.Time
	SchemaID         int
	Fields           []fieldRow
	Schemas          []schemaRow
	SpecID           int
	Partition        []partitionRow
	SortOrder        string
	Properties       []kv
	Snapshots        []snapshotRow
	CurrentSnapshot  *int64
	Topic            string // the topic materialized into the table, if any
	TopicURL         string
	Snippets         []snippet
	State            tableState
}

func (c *Console) tablePage(w http.ResponseWriter, r *http.Request) {
	id := identOf(r, "table")
	api, ctx := c.api(r), r.Context()
	var res spec.LoadTableResult
	if err := api.do(ctx, http.MethodGet, "/v1/namespaces/"+nsPath(id.Namespace)+"/tables/"+escapeLevel(id.Name), nil, &res); err != nil {
		c.fail(w, r, err, "")
		return
	}
	md, err := table.ParseMetadataBytes(res.Metadata)
	if err != nil {
		c.fail(w, r, fmt.Errorf("table %s: %w", id, err), "")
		return
	}
	d := tableData{Ident: id, Name: catalog.FormatIdent(id), Location: md.Location(), UUID: md.TableUUID().String(),
		FormatVersion: md.Version(), LastUpdated: time.UnixMilli(md.LastUpdatedMillis())}
	if res.MetadataLocation != nil {
		d.MetadataLocation = *res.MetadataLocation
	}
	sc := md.CurrentSchema()
	d.SchemaID, d.Fields = sc.ID, fieldRows(sc.Fields(), "", 0)
	for _, s := range md.Schemas() {
		d.Schemas = append(d.Schemas, schemaRow{ID: s.ID, Fields: s.NumFields(), Current: s.ID == sc.ID})
	}
	ps := md.PartitionSpec()
	d.SpecID = ps.ID()
	for _, f := range ps.Fields() {
		src := make([]string, 0, len(f.SourceIDs))
		for _, sid := range f.SourceIDs {
			name, ok := sc.FindColumnName(sid)
			if !ok {
				name = fmt.Sprintf("field %d", sid)
			}
			src = append(src, name)
		}
		d.Partition = append(d.Partition, partitionRow{FieldID: f.FieldID, Name: f.Name, Transform: f.Transform.String(), Source: strings.Join(src, ", ")})
	}
	if so := md.SortOrder(); !so.IsUnsorted() {
		d.SortOrder = so.String()
	}
	props := md.Properties()
	for _, k := range slices.Sorted(maps.Keys(props)) {
		d.Properties = append(d.Properties, kv{k, props[k]})
	}
	if cur := md.CurrentSnapshot(); cur != nil {
		d.CurrentSnapshot = &cur.SnapshotID
	}
	snaps := md.Snapshots()
	for i := len(snaps) - 1; i >= 0; i-- { // newest first
		d.Snapshots = append(d.Snapshots, snapshotOf(snaps[i], d.CurrentSnapshot))
	}
	var list listTopicsResponse
	if api.do(ctx, http.MethodGet, "/management/v1/topics", nil, &list) == nil {
		for _, st := range list.Topics {
			if t, err := topics.ParseTable(st.Table); err == nil && t.Name == id.Name && slices.Equal(t.Namespace, id.Namespace) {
				d.Topic, d.TopicURL = st.Topic, Prefix+"/topics/"+url.PathEscape(st.Topic)
			}
		}
	}
	if d.State, err = c.tableState(ctx, api, id); err != nil {
		c.fail(w, r, err, "")
		return
	}
	d.Snippets = c.snippets(r, id)
	c.render(w, r, http.StatusOK, "table", page{Title: identText(id.Namespace, id.Name), Nav: "catalog", Data: d})
}

// snapshotOf is a snapshot's row; Tarn's offsets summary
// (offsets.Property) is shown apart, per partition.
func snapshotOf(s table.Snapshot, current *int64) snapshotRow {
	row := snapshotRow{ID: s.SnapshotID, Sequence: s.SequenceNumber, Time: time.UnixMilli(s.TimestampMs), SchemaID: s.SchemaID,
		Current: current != nil && *current == s.SnapshotID}
	if s.ParentSnapshotID != nil {
		row.Parent, row.HasParent = *s.ParentSnapshotID, true
	}
	if s.Summary == nil {
		return row
	}
	row.Operation = string(s.Summary.Operation)
	for _, k := range slices.Sorted(maps.Keys(s.Summary.Properties)) {
		v := s.Summary.Properties[k]
		if k != offsets.Property {
			row.Summary = append(row.Summary, kv{k, v})
			continue
		}
		o, err := offsets.Parse(v)
		if err != nil {
			row.KafkaInvalid = v
			continue
		}
		row.Kafka = &o
		for _, p := range slices.Sorted(maps.Keys(o.Next)) {
			row.KafkaParts = append(row.KafkaParts, kv{fmt.Sprint(p), count(o.Next[p])})
		}
	}
	return row
}

type viewData struct {
	Ident           catalog.Ident
	Name            string
	Location        string
	UUID            string
	FormatVersion   int
	SchemaID        int
	Fields          []fieldRow
	VersionID       int64
	Representations []view.Representation
	Versions        []viewVersion
	Properties      []kv
}

type viewVersion struct {
	ID       int64
	Time     time.Time
	SchemaID int
	Summary  []kv
	Current  bool
}

func (c *Console) viewPage(w http.ResponseWriter, r *http.Request) {
	id := identOf(r, "view")
	var res spec.LoadViewResult
	if err := c.api(r).do(r.Context(), http.MethodGet, "/v1/namespaces/"+nsPath(id.Namespace)+"/views/"+escapeLevel(id.Name), nil, &res); err != nil {
		c.fail(w, r, err, "")
		return
	}
	md, err := view.ParseMetadataBytes(res.Metadata)
	if err != nil {
		c.fail(w, r, fmt.Errorf("view %s: %w", id, err), "")
		return
	}
	d := viewData{Ident: id, Name: catalog.FormatIdent(id), Location: md.Location(), UUID: md.ViewUUID().String(), FormatVersion: md.FormatVersion(),
		VersionID: md.CurrentVersionID()}
	if sc := md.CurrentSchema(); sc != nil {
		d.SchemaID, d.Fields = sc.ID, fieldRows(sc.Fields(), "", 0)
	}
	if v := md.CurrentVersion(); v != nil {
		d.Representations = v.Representations
	}
	vs := md.Versions()
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		row := viewVersion{ID: v.VersionID, Time: time.UnixMilli(v.TimestampMS), SchemaID: v.SchemaID, Current: v.VersionID == d.VersionID}
		for _, k := range slices.Sorted(maps.Keys(v.Summary)) {
			row.Summary = append(row.Summary, kv{k, v.Summary[k]})
		}
		d.Versions = append(d.Versions, row)
	}
	props := md.Properties()
	for _, k := range slices.Sorted(maps.Keys(props)) {
		d.Properties = append(d.Properties, kv{k, props[k]})
	}
	c.render(w, r, http.StatusOK, "view", page{Title: identText(id.Namespace, id.Name), Nav: "catalog", Data: d})
}
