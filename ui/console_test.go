package ui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/offsets"
	"github.com/tarnhq/tarn/publish"
	"github.com/tarnhq/tarn/spec"
)

// TestTopicsPageShowsAPIStatus: the topics list shows the topic's state,
// rows and lag as the management API reports them.
func TestTopicsPageShowsAPIStatus(t *testing.T) {
	f := newFixture(t, false)
	f.enable(t)
	f.produce(t, 0, f.values[:70]...)
	f.produce(t, 1, f.values[70:100]...)
	st := f.waitTopic(t, func(st topics.Status) bool { return st.Rows == 100 && st.LagRecords != nil && *st.LagRecords == 0 })

	b := f.browser(t)
	p := b.get("/ui")
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/ui/topics", p.location)
	p = b.get("/ui/topics")
	require.Equal(t, http.StatusOK, p.status, p.body)
	assert.Contains(t, p.body, `<tr data-topic="flights">`)
	assert.Contains(t, p.body, `<span class="state state-syncing">syncing</span>`)
	assert.Equal(t, []string{strconv.FormatInt(st.Rows, 10)}, attrs(p.body, `data-field="rows" data-value`))
	assert.Contains(t, p.body, `data-field="lag-records">0</td>`)
	assert.Contains(t, p.body, `href="/ui/namespaces/demo/tables/flights">demo.flights</a>`)
	assert.Contains(t, p.body, "on target")
}

// TestTablePageMatchesLoadTable: the table page's schema (field ids,
// nested fields included), partition spec and snapshots (ids, order,
// operation, the Kafka offsets of Tarn's summary) are those of the REST
// API's loadTable.
func TestTablePageMatchesLoadTable(t *testing.T) {
	f := newFixture(t, false)
	f.enable(t)
	f.produce(t, 0, f.values[:40]...)
	f.waitTopic(t, func(st topics.Status) bool { return st.Rows == 40 })
	f.produce(t, 2, f.values[40:50]...)
	f.waitTopic(t, func(st topics.Status) bool { return st.Rows == 50 && st.LagRecords != nil && *st.LagRecords == 0 })

	var res spec.LoadTableResult
	require.Equal(t, http.StatusOK, f.api(t, http.MethodGet, "/v1/namespaces/demo/tables/flights", "", &res))
	md, err := table.ParseMetadataBytes(res.Metadata)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(md.Snapshots()), 2)

	p := f.browser(t).get("/ui/namespaces/demo/tables/flights")
	require.Equal(t, http.StatusOK, p.status, p.body)

	var wantSnaps []string
	for i := len(md.Snapshots()) - 1; i >= 0; i-- {
		wantSnaps = append(wantSnaps, strconv.FormatInt(md.Snapshots()[i].SnapshotID, 10))
	}
	assert.Equal(t, wantSnaps, attrs(p.body, "data-snapshot-id"), "snapshots, newest first")
	assert.Contains(t, p.body, fmt.Sprintf(`<dd id="current-snapshot"><code>%d</code>`, md.CurrentSnapshot().SnapshotID))

	var wantFields []string
	for _, f := range fieldIDs(t, md.CurrentSchema()) {
		wantFields = append(wantFields, strconv.Itoa(f))
	}
	got := attrs(p.body, "data-field-id")
	slices.SortFunc(got, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	assert.Equal(t, wantFields, got, "every field id of the current schema, nested ones too")
	assert.Contains(t, p.body, `<td class="field d1" title="_kafka.offset">offset</td>`)

	ps := md.PartitionSpec()
	for _, pf := range ps.Fields() {
		assert.Contains(t, p.body, fmt.Sprintf(`<td class="num">%d</td><td>%s</td><td><code>%s</code></td>`, pf.FieldID, pf.Name, pf.Transform))
	}

	head := md.CurrentSnapshot()
	o, err := offsets.Parse(head.Summary.Properties[offsets.Property])
	require.NoError(t, err)
	assert.Equal(t, map[int32]int64{0: 40, 2: 10}, o.Next)
	row := p.body[strings.Index(p.body, fmt.Sprintf(`data-snapshot-id="%d"`, head.SnapshotID)):]
	row = row[:strings.Index(row, "</tr>")]
	assert.Contains(t, row, `<td data-field="operation">`+string(head.Summary.Operation)+`</td>`)
	assert.Contains(t, row, `<span class="chip" data-partition="0">p0 → 40</span>`)
	assert.Contains(t, row, `<span class="chip" data-partition="2">p2 → 10</span>`)
	assert.Contains(t, row, "<dt>added-records</dt><dd>"+head.Summary.Properties["added-records"]+"</dd>")

	for _, engine := range []string{"load_catalog(\"tarn\", type=\"rest\", uri=\"" + f.url + "\")", "spark.sql.catalog.tarn.uri=" + f.url,
		"iceberg.rest-catalog.uri=" + f.url, "ENDPOINT '" + f.url + "', AUTHORIZATION_TYPE 'none'", `SELECT * FROM tarn."demo"."flights" LIMIT 10;`} {
		assert.Contains(t, p.body, htmlEscape(engine))
	}

	c := f.browser(t).get("/ui/catalog")
	require.Equal(t, http.StatusOK, c.status)
	assert.Contains(t, c.body, `<a href="/ui/namespaces/demo/tables/flights">flights</a>`)
}

// fieldIDs are the ids of every field of sc (nested too), ascending.
func fieldIDs(t *testing.T, sc *iceberg.Schema) []int {
	t.Helper()
	fields, err := sc.FlatFields()
	require.NoError(t, err)
	var ids []int
	for f := range fields {
		ids = append(ids, f.ID)
	}
	slices.Sort(ids)
	return ids
}

func htmlEscape(s string) string {
	return strings.NewReplacer(`"`, "&#34;", "'", "&#39;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// TestResumeFromConsole: a topic suspended by an incompatible schema
// shows the reason on its page; resuming from the console in error mode
// skip (confirmed) patches the error mode and resumes it through the
// management API, and the topic syncs again.
func TestResumeFromConsole(t *testing.T) {
	f := newFixture(t, false)
	f.enable(t)
	f.produce(t, 0, f.values[:10]...)
	f.waitTopic(t, func(st topics.Status) bool { return st.Rows == 10 })
	f.produceIncompatible(t, 0)
	st := f.waitTopic(t, func(st topics.Status) bool { return st.State == topics.StateSuspended })

	b := f.browser(t)
	p := b.get("/ui/topics/flights")
	require.Equal(t, http.StatusOK, p.status, p.body)
	assert.Contains(t, p.body, `<p data-field="reason">`+htmlEscape(st.Reason)+`</p>`)
	assert.Contains(t, st.Reason, "incompatible")
	assert.Contains(t, p.body, `action="/ui/topics/flights/resume"`)

	form := url.Values{"csrf": {b.csrf()}, "error-mode": {"skip"}}
	// Without confirmation: a confirmation page, nothing changed.
	p = b.post("/ui/topics/flights/resume", form)
	require.Equal(t, http.StatusOK, p.status, p.body)
	assert.Contains(t, p.body, "Resume topic flights with error mode skip?")
	assert.Equal(t, topics.StateSuspended, f.waitTopic(t, func(topics.Status) bool { return true }).State)

	form.Set("confirmed", "yes")
	p = b.post("/ui/topics/flights/resume", form)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	assert.Equal(t, "/ui/topics/flights?done=resumed", p.location)
	f.produce(t, 1, f.values[10:15]...)
	st = f.waitTopic(t, func(st topics.Status) bool { return st.State == topics.StateSyncing && st.Rows == 15 })
	assert.Equal(t, "skip", st.Config.ErrorMode)
	assert.EqualValues(t, 1, st.Errors["incompatible_schema"])
	p = b.get(p.location)
	assert.Contains(t, p.body, "Resumed: the topic is starting again.")
	assert.Contains(t, p.body, "incompatible_schema")
}

// TestActionsRefuseForgedRequests: an action without this session's CSRF
// token, or sent from another site, is refused (403) and changes
// nothing; so is a flash message a link makes up.
func TestActionsRefuseForgedRequests(t *testing.T) {
	f := newFixture(t, false)
	f.enable(t)
	b := f.browser(t)
	require.Equal(t, http.StatusOK, b.get("/ui/topics/flights").status)
	tok := b.csrf()
	for name, c := range map[string]struct {
		form   url.Values
		header []string
	}{
		"no token":    {url.Values{"confirmed": {"yes"}}, nil},
		"wrong token": {url.Values{"confirmed": {"yes"}, "csrf": {tok + "x"}}, nil},
		"cross-site":  {url.Values{"confirmed": {"yes"}, "csrf": {tok}}, []string{"Sec-Fetch-Site", "cross-site"}},
		"other origin": {url.Values{"confirmed": {"yes"}, "csrf": {tok}},
			[]string{"Origin", "http://evil.example"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := b.post("/ui/topics/flights/disable", c.form, c.header...)
			assert.Equal(t, http.StatusForbidden, p.status, p.body)
			st := f.waitTopic(t, func(topics.Status) bool { return true })
			assert.NotEqual(t, topics.StateDisabled, st.State)
		})
	}
	p := b.get("/ui/topics/flights?done=Call+us+at+555")
	assert.NotContains(t, p.body, "555")
	// The same form with the token and confirmation does disable.
	p = b.post("/ui/topics/flights/disable", url.Values{"confirmed": {"yes"}, "csrf": {tok}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	assert.Equal(t, topics.StateDisabled, f.waitTopic(t, func(topics.Status) bool { return true }).State)
}

// TestTablePageShowsMaintenanceFormatsAndPublishing: a table's page shows
// what the management API reports of it: each maintenance job's last run
// and result (GET /management/v1/maintenance), its Delta log's version
// (GET .../tables/{table}/formats) and its state in each publish target
// (GET /management/v1/publish).
func TestTablePageShowsMaintenanceFormatsAndPublishing(t *testing.T) {
	f := newFixture(t, false)
	on := true
	_, err := f.mgr.Enable(t.Context(), topics.TopicConfig{Topic: "flights", Table: "demo.flights", TargetLagMs: 1000, Delta: &on})
	require.NoError(t, err)
	f.produce(t, 0, f.values[:30]...)
	f.waitTopic(t, func(st topics.Status) bool { return st.Rows == 30 })
	f.produce(t, 1, f.values[30:60]...)
	f.waitTopic(t, func(st topics.Status) bool { return st.Rows == 60 && st.LagRecords != nil && *st.LagRecords == 0 })
	id := catalog.Ident{Namespace: catalog.Namespace{"demo"}, Name: "flights"}
	results, err := f.maint.RunJobs(t.Context(), id, []string{maintenance.JobCompact, maintenance.JobExpire, maintenance.JobOrphans})
	require.NoError(t, err)
	require.Len(t, results, 3)

	var ms maintenance.Status
	require.Equal(t, http.StatusOK, f.api(t, http.MethodGet, "/management/v1/maintenance", "", &ms))
	require.Len(t, ms.Tables, 1)
	var fm delta.Formats
	var ps publish.Status
	deadline := time.Now().Add(30 * time.Second)
	for {
		require.Equal(t, http.StatusOK, f.api(t, http.MethodGet, "/management/v1/tables/demo.flights/formats", "", &fm))
		require.Equal(t, http.StatusOK, f.api(t, http.MethodGet, "/management/v1/publish", "", &ps))
		if fm.Delta.SnapshotID != nil && fm.Iceberg.SnapshotID != nil && *fm.Delta.SnapshotID == *fm.Iceberg.SnapshotID &&
			len(ps.Targets[0].Tables) == 1 && ps.Targets[0].Tables[0].State == publish.StatePublished {
			break
		}
		require.True(t, time.Now().Before(deadline), "formats %+v, publish %+v", fm, ps)
		time.Sleep(100 * time.Millisecond)
	}

	p := f.browser(t).get("/ui/namespaces/demo/tables/flights")
	require.Equal(t, http.StatusOK, p.status, p.body)
	sec := section(t, p.body, `id="maintenance"`)
	for _, r := range results {
		row := section(t, sec, `data-job="`+r.Job+`"`)
		js := ms.Tables[0].Jobs[r.Job]
		assert.Contains(t, row, `datetime="`+js.LastRun.UTC().Format(time.RFC3339)+`"`, r.Job)
		switch {
		case r.Skipped != "":
			assert.Contains(t, row, "skipped: "+r.Skipped, r.Job)
		case r.Job == maintenance.JobCompact:
			assert.Contains(t, row, fmt.Sprintf("%d files rewritten into %d", r.FilesRewritten, r.FilesAdded))
		case r.Job == maintenance.JobExpire:
			assert.Contains(t, row, fmt.Sprintf("%d snapshots expired", r.SnapshotsExpired))
		case r.Job == maintenance.JobOrphans:
			assert.Contains(t, row, fmt.Sprintf("%d orphan files removed", r.OrphansRemoved))
		}
	}
	assert.NotContains(t, sec, `data-job="manifests"`, "a job that did not run has no row")

	sec = section(t, p.body, `id="formats"`)
	assert.Contains(t, sec, `<dd data-field="delta-enabled">on</dd>`)
	assert.Contains(t, sec, fmt.Sprintf(`<dd data-field="delta-version">%d</dd>`, *fm.Delta.Version))
	assert.Contains(t, sec, "<code>"+fm.Delta.Location+"</code>")
	row := section(t, sec, `data-target="lake"`)
	assert.Contains(t, row, `<td data-field="publish-state">published</td>`)
	assert.Contains(t, row, "<code>demo.flights</code>", "the target's name of the table")
	assert.Contains(t, row, fmt.Sprintf("<code>%d</code>", *ps.Targets[0].Tables[0].SnapshotID))
}

// TestTablePageBeforeMaintenance: a table no maintenance job has run on,
// with Delta output off, says so.
func TestTablePageBeforeMaintenance(t *testing.T) {
	f := newFixture(t, false)
	f.enable(t)
	f.produce(t, 0, f.values[:5]...)
	f.waitTopic(t, func(st topics.Status) bool { return st.Rows == 5 })
	p := f.browser(t).get("/ui/namespaces/demo/tables/flights")
	require.Equal(t, http.StatusOK, p.status, p.body)
	assert.Contains(t, section(t, p.body, `id="maintenance"`), "No maintenance job has run on this table since Tarn started.")
	assert.Contains(t, section(t, p.body, `id="formats"`), `<dd data-field="delta-enabled">off</dd>`)
}

// section is body from attr to the next </section> (for an id) or </tr>
// (for a data- attribute: a table row).
func section(t *testing.T, body, attr string) string {
	t.Helper()
	i := strings.Index(body, attr)
	require.GreaterOrEqual(t, i, 0, "no %s in the page", attr)
	end := "</section>"
	if strings.HasPrefix(attr, "data-") {
		end = "</tr>"
	}
	s := body[i:]
	if j := strings.Index(s, end); j >= 0 {
		return s[:j]
	}
	return s
}

// TestCatalogPagesThroughEveryNamespace pins a defect: the catalog page
// walked at most 500 namespaces and said "Showing the first 500", so the
// rest of a larger catalog could not be reached from the console. Now it
// lists every namespace (following the API's next-page-token) and pages
// them, each page linking the next.
func TestCatalogPagesThroughEveryNamespace(t *testing.T) {
	f := newFixture(t, false)
	want := map[string]bool{}
	for i := range 620 {
		ns := catalog.Namespace{fmt.Sprintf("ns%04d", i)}
		require.NoError(t, f.cat.CreateNamespace(t.Context(), ns, nil))
		want[`[&#34;`+ns[0]+`&#34;]`] = true
	}
	b := f.browser(t)
	got := map[string]bool{}
	next, pages := "/ui/catalog", 0
	for next != "" {
		p := b.get(next)
		require.Equal(t, http.StatusOK, p.status, p.body)
		pages++
		require.Less(t, pages, 20, "the pages do not end")
		for _, k := range attrs(p.body, "data-namespace") {
			assert.False(t, got[k], "namespace %s on two pages", k)
			got[k] = true
		}
		next = ""
		if m := regexp.MustCompile(`<a href="([^"]*)" rel="next">`).FindStringSubmatch(p.body); m != nil {
			next = m[1]
		}
	}
	assert.Equal(t, want, got, "every namespace, once")
	assert.Equal(t, 7, pages)
	assert.Equal(t, http.StatusBadRequest, b.get("/ui/catalog?page=0").status)
}

// TestDottedLevelsShownDistinctly pins a defect: a namespace level
// holding a dot made the table page's title the identifier's raw JSON
// ({"namespace":["a.b"],"name":"t"}), and the catalog page showed
// ["a.b"] and ["a", "b"] both as "a.b". Now every level is its own box.
func TestDottedLevelsShownDistinctly(t *testing.T) {
	f := newFixture(t, false)
	ctx := t.Context()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64})
	for _, ns := range []catalog.Namespace{{"a.b"}, {"a"}, {"a", "b"}} {
		require.NoError(t, f.cat.CreateNamespace(ctx, ns, nil))
	}
	for _, ns := range []catalog.Namespace{{"a.b"}, {"a", "b"}} {
		_, err := f.cat.CreateTable(ctx, f.wh, ns, spec.CreateTableRequest{Name: "t", Schema: sc})
		require.NoError(t, err)
	}
	b := f.browser(t)
	p := b.get("/ui/catalog")
	require.Equal(t, http.StatusOK, p.status, p.body)
	one := `<span class="ident"><span class="lvl">a.b</span></span>`
	two := `<span class="ident"><span class="lvl">a</span><span class="sep" aria-hidden="true">›</span><span class="lvl">b</span></span>`
	assert.Equal(t, 1, strings.Count(p.body, one), "[a.b]")
	assert.Equal(t, 1, strings.Count(p.body, two), "[a b]")

	p = b.get("/ui/namespaces/" + url.PathEscape("a.b") + "/tables/t")
	require.Equal(t, http.StatusOK, p.status, p.body)
	assert.Contains(t, p.body, "<title>a.b › t · Tarn</title>")
	assert.Contains(t, p.body, `<h1><span class="ident"><span class="lvl">a.b</span><span class="sep" aria-hidden="true">›</span><span class="lvl name">t</span></span>`)
	assert.NotContains(t, p.body, "&#34;namespace&#34;", "no raw JSON identifier")
	p = b.get("/ui/namespaces/a%1Fb/tables/t")
	require.Equal(t, http.StatusOK, p.status, p.body)
	assert.Contains(t, p.body, "<title>a › b › t · Tarn</title>")
}

// TestDeadLettersRoute: the management API's dead-letters route, which
// the topic page reads, returns the dead letter table's records newest
// first, bounded by limit; it refuses a bad limit and a topic whose
// error mode is not dlq; and the page lists the records.
func TestDeadLettersRoute(t *testing.T) {
	f := newFixture(t, false)
	_, err := f.mgr.Enable(t.Context(), topics.TopicConfig{Topic: demo.Topic, Table: "demo.flights", TargetLagMs: 1000, ErrorMode: "dlq"})
	require.NoError(t, err)
	var got struct {
		Records []pipeline.DeadLetter `json:"records"`
	}
	require.Equal(t, http.StatusOK, f.api(t, http.MethodGet, "/management/v1/topics/flights/dead-letters", "", &got))
	assert.Empty(t, got.Records, "before the first bad record the table does not exist")
	f.produce(t, 1, f.values[0], []byte("bad one"), f.values[1], []byte("bad two"))
	f.waitTopic(t, func(st topics.Status) bool { return st.Offsets[1] == 4 })
	require.Equal(t, http.StatusOK, f.api(t, http.MethodGet, "/management/v1/topics/flights/dead-letters?limit=5", "", &got))
	require.Len(t, got.Records, 2)
	// Same record time (the same produce): newest by offset.
	assert.Equal(t, []int64{3, 1}, []int64{got.Records[0].Offset, got.Records[1].Offset})
	assert.Equal(t, string(pipeline.KindBadHeader), got.Records[0].Kind)
	require.Equal(t, http.StatusOK, f.api(t, http.MethodGet, "/management/v1/topics/flights/dead-letters?limit=1", "", &got))
	assert.Len(t, got.Records, 1)
	for _, q := range []string{"0", "201", "x"} {
		assert.Equal(t, http.StatusBadRequest, f.api(t, http.MethodGet, "/management/v1/topics/flights/dead-letters?limit="+q, "", nil), q)
	}
	p := f.browser(t).get("/ui/topics/flights")
	assert.Equal(t, []string{"1/3", "1/1"}, attrs(p.body, "data-dead-letter"))

	_, err = f.mgr.Update(t.Context(), demo.Topic, topics.Patch{ErrorMode: ptr("skip")})
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, f.api(t, http.MethodGet, "/management/v1/topics/flights/dead-letters", "", nil))
}

func ptr[T any](v T) *T { return &v }
