package ui

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/topics"
)

// listTopicsResponse is the body of GET /management/v1/topics.
type listTopicsResponse struct {
	Topics []topics.Status `json:"topics"`
}

// deadLettersResponse is the body of GET
// /management/v1/topics/{topic}/dead-letters (server's
// DeadLettersResponse).
type deadLettersResponse struct {
	Records []pipeline.DeadLetter `json:"records"`
}

// topicRow is one topic as the list and its page show it.
type topicRow struct {
	topics.Status
	URL        string
	TableURL   string // empty when the table name does not parse
	Namespace  []string
	RowsPerSec *float64
	// Freshness compares LagSeconds with the freshness target
	// (target-lag-ms): "on target", "behind" or "unknown".
	Freshness string
	TargetLag float64 // seconds
	ErrorKind []kindCount
	ErrorSum  int64
}

type kindCount struct {
	Kind  string
	Count int64
}

// Freshness states.
const (
	freshOnTarget = "on target"
	freshBehind   = "behind"
	freshUnknown  = "unknown"
)

func (c *Console) row(now time.Time, st topics.Status) topicRow {
	row := topicRow{Status: st, URL: Prefix + "/topics/" + url.PathEscape(st.Topic),
		TargetLag: float64(st.Config.TargetLagMs) / 1000, Freshness: freshUnknown}
	if id, err := topics.ParseTable(st.Table); err == nil {
		row.Namespace, row.TableURL = id.Namespace, tableURL(id)
	}
	if v, ok := c.history.perSecond(now, st); ok {
		row.RowsPerSec = &v
	}
	if st.LagSeconds != nil && st.State == topics.StateSyncing {
		// A commit is due once the oldest buffered record is
		// target-lag old, so lag up to the target plus the commit's own
		// time is on target.
		row.Freshness = freshOnTarget
		if *st.LagSeconds > row.TargetLag+commitSlackSeconds {
			row.Freshness = freshBehind
		}
	}
	for _, k := range slices.Sorted(maps.Keys(st.Errors)) {
		if n := st.Errors[k]; n > 0 {
			row.ErrorKind = append(row.ErrorKind, kindCount{k, n})
			row.ErrorSum += n
		}
	}
	return row
}

// commitSlackSeconds is what a commit may add to the freshness target
// before a topic counts as behind: writing the files and the catalog
// commit take a few seconds on a busy warehouse.
const commitSlackSeconds = 5

// tableURL is the console page of table id.
func tableURL(id catalog.Ident) string {
	return Prefix + "/namespaces/" + url.PathEscape(joinLevels(id.Namespace)) + "/tables/" + url.PathEscape(id.Name)
}

type topicsData struct {
	Topics     []topicRow
	NoIngest   string // why there are no topics (ingest not configured)
	AuthFilter bool   // oauth2: the list holds the topics the principal manages
	CanEnable  bool   // the principal may enable topics (enable.go)
}

func (c *Console) topicsPage(w http.ResponseWriter, r *http.Request) {
	var list listTopicsResponse
	d := topicsData{AuthFilter: c.cfg.Auth != nil, CanEnable: mayEnable(r)}
	if err := c.api(r).do(r.Context(), http.MethodGet, "/management/v1/topics", nil, &list); err != nil {
		if ae, ok := err.(*APIError); ok && ae.Status == http.StatusServiceUnavailable {
			d.NoIngest = ae.Message
		} else {
			c.fail(w, r, err, "")
			return
		}
	}
	now := time.Now()
	for _, st := range list.Topics {
		d.Topics = append(d.Topics, c.row(now, st))
	}
	c.render(w, r, http.StatusOK, "topics", page{Title: "Topics", Nav: "topics", Data: d})
}

type topicData struct {
	topicRow
	CanManage bool
	DLQ       string // the dead letter table, when the error mode is dlq
	DLQURL    string
	// DeadLetters are the dead letter table's newest records (at most
	// deadLetterRows, newest first); DeadLettersErr says why they could
	// not be read.
	DeadLetters    []pipeline.DeadLetter
	DeadLettersErr string
	// Charts are the last hour of the topic's lag, rows/s and commit
	// latency (history.go).
	Charts     []chart
	ErrorModes []string
	Partitions []partitionOffset
}

type partitionOffset struct {
	Partition int32
	Next      int64
	Start     int64
	HasStart  bool
}

// deadLetterRows is how many dead letter records a topic's page shows:
// enough to see what goes wrong, few enough to read at a glance (the
// table holds them all).
const deadLetterRows = 10

// errorModes are the topic error modes a user may pick (DESIGN.md "Bad
// records").
var errorModes = []string{"suspend", "skip", "dlq"}

func (c *Console) topicData(ctx context.Context, r *http.Request, name string) (topicData, error) {
	var st topics.Status
	if err := c.api(r).do(ctx, http.MethodGet, "/management/v1/topics/"+url.PathEscape(name), nil, &st); err != nil {
		return topicData{}, err
	}
	now := time.Now()
	d := topicData{topicRow: c.row(now, st), ErrorModes: errorModes, Charts: charts(now, c.history.of(st.Topic))}
	d.CanManage = d.Namespace != nil && mayManage(r, d.Namespace)
	if id, err := topics.ParseTable(st.Table); err == nil && st.Config.ErrorMode == "dlq" {
		dlq := pipeline.DLQTable(id)
		d.DLQ, d.DLQURL = catalog.FormatIdent(dlq), tableURL(dlq)
		var dl deadLettersResponse
		err := c.api(r).do(ctx, http.MethodGet, "/management/v1/topics/"+url.PathEscape(name)+"/dead-letters?limit="+fmt.Sprint(deadLetterRows), nil, &dl)
		if err != nil {
			d.DeadLettersErr = err.Error()
		}
		d.DeadLetters = dl.Records
	}
	for _, p := range slices.Sorted(maps.Keys(st.Offsets)) {
		start, ok := st.StartOffsets[p]
		d.Partitions = append(d.Partitions, partitionOffset{Partition: p, Next: st.Offsets[p], Start: start, HasStart: ok})
	}
	return d, nil
}

func (c *Console) topicPage(w http.ResponseWriter, r *http.Request) {
	d, err := c.topicData(r.Context(), r, r.PathValue("topic"))
	if err != nil {
		c.fail(w, r, err, "")
		return
	}
	c.render(w, r, http.StatusOK, "topic", page{Title: d.Topic, Nav: "topics", Data: d})
}

// confirmData is the confirmation page of an action (without script; the
// script asks in a dialog and sends confirmed=yes).
type confirmData struct {
	Topic, Action, Question, Button string
	// Post and Cancel are where Confirm posts and Cancel goes; empty:
	// the topic's action and page.
	Post, Cancel string
	Fields       map[string]string
}

// flashes are the messages an action's redirect may name (?done=):
// only these, so a link cannot put words of its own on the page.
var flashes = map[string]string{
	"resumed":    "Resumed: the topic is starting again.",
	"error-mode": "Error mode saved.",
	"disabled":   "Disabled: ingest stopped.",
	"enabled":    "Enabled: the table is created and the topic starts syncing.",
}

// topicAction runs resume, error-mode or disable on a topic through the
// management API (the same authorization as a client's request), after
// confirmation.
func (c *Console) topicAction(w http.ResponseWriter, r *http.Request) {
	name, action := r.PathValue("topic"), r.PathValue("action")
	api, ctx, path := c.api(r), r.Context(), "/management/v1/topics/"+url.PathEscape(name)
	mode := r.PostFormValue("error-mode")
	if mode != "" && !slices.Contains(errorModes, mode) {
		c.fail(w, r, &APIError{Status: http.StatusBadRequest}, fmt.Sprintf("Unknown error mode %q.", mode))
		return
	}
	release := r.PostFormValue("release") == "true"
	// The topic as the API shows it to this principal: a topic it may
	// not see (or that is gone) gets the API's answer, not a
	// confirmation page.
	cur, err := c.topicData(ctx, r, name)
	if err != nil {
		c.fail(w, r, err, "")
		return
	}
	var q confirmData
	switch action {
	case "resume":
		q = confirmData{Question: "Resume topic " + name + "?", Button: "Resume"}
		if mode != "" {
			q.Question = "Resume topic " + name + " with error mode " + mode + "?"
		}
	case "error-mode":
		if mode == "" {
			c.fail(w, r, &APIError{Status: http.StatusBadRequest}, "Pick an error mode.")
			return
		}
		q = confirmData{Question: "Set the error mode of topic " + name + " to " + mode + "?", Button: "Set error mode"}
	case "disable":
		q = confirmData{Question: "Disable topic " + name + "? Ingest stops; the table stays.", Button: "Disable"}
		if release {
			q.Question = "Disable topic " + name + " and release its table? Ingest stops and the table becomes writable by any engine."
		}
	default:
		c.fail(w, r, &APIError{Status: http.StatusNotFound}, "Unknown action "+action+".")
		return
	}
	if r.PostFormValue("confirmed") != "yes" {
		q.Topic, q.Action = name, action
		q.Fields = map[string]string{"error-mode": mode}
		if release {
			q.Fields["release"] = "true"
		}
		c.render(w, r, http.StatusOK, "confirm", page{Title: "Confirm", Nav: "topics", Data: q})
		return
	}
	done := action
	switch action {
	case "resume":
		if mode != "" && mode != cur.Config.ErrorMode {
			err = api.do(ctx, http.MethodPatch, path, topics.Patch{ErrorMode: &mode}, nil)
		}
		if err == nil {
			err = api.do(ctx, http.MethodPost, path+"/resume", nil, nil)
			done = "resumed"
		}
	case "error-mode":
		err = api.do(ctx, http.MethodPatch, path, topics.Patch{ErrorMode: &mode}, nil)
	case "disable":
		err = api.do(ctx, http.MethodDelete, path+"?release="+fmt.Sprint(release), nil, nil)
		done = "disabled"
	}
	if err != nil {
		// Show the topic with the API's answer (its message names the
		// privilege or state that refused the action).
		d, derr := c.topicData(ctx, r, name)
		if derr != nil {
			c.fail(w, r, err, "")
			return
		}
		status := http.StatusInternalServerError
		if ae, ok := err.(*APIError); ok {
			status = ae.Status
		}
		c.render(w, r, status, "topic", page{Title: name, Nav: "topics", Error: err.Error(), Data: d})
		return
	}
	http.Redirect(w, r, Prefix+"/topics/"+url.PathEscape(name)+"?done="+done, http.StatusSeeOther)
}
