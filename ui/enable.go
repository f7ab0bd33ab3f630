package ui

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
)

// Enabling a topic from the console (issue 19 item 2): a form over the
// broker's topics (GET /management/v1/kafka/topics) that, confirmed,
// sends the same POST /management/v1/topics as `tarn topics enable`.

// brokerTopicsResponse is the body of GET /management/v1/kafka/topics
// (server's BrokerTopicsResponse).
type brokerTopicsResponse struct {
	Topics []topics.BrokerTopic `json:"topics"`
}

// The choices the form offers (topics.TopicConfig's).
var (
	enableFormats = []string{"auto", "avro", "protobuf", "json-schema", "json", "connect-json", "raw"}
	enableModes   = []string{"append", "upsert", "debezium"}
)

type enableData struct {
	Broker     []topics.BrokerTopic
	BrokerErr  string // why the broker's topics could not be listed
	Formats    []string
	Modes      []string
	ErrorModes []string
	// Form is what was sent (kept when the API refuses it).
	Form map[string]string
}

// mayEnable reports whether r's principal may see the enable form: it
// lists every topic of the cluster, which needs manage on the catalog
// (as GET /management/v1/kafka/topics does).
func mayEnable(r *http.Request) bool {
	s := sessionOf(r)
	return s.az != nil && s.az.Allowed(s.id, auth.Manage, auth.Catalog())
}

// refuseEnable answers 403 to a principal that may not see the form
// (the API refuses it the broker's topics too).
func (c *Console) refuseEnable(w http.ResponseWriter, r *http.Request) bool {
	if mayEnable(r) {
		return false
	}
	c.fail(w, r, &APIError{Status: http.StatusForbidden}, "Enabling a topic from the console needs manage on the catalog.")
	return true
}

func (c *Console) enablePage(w http.ResponseWriter, r *http.Request) {
	if c.refuseEnable(w, r) {
		return
	}
	c.renderEnable(w, r, http.StatusOK, "", map[string]string{"topic": r.URL.Query().Get("topic"), "format": "auto", "mode": "append", "error-mode": "suspend"})
}

func (c *Console) renderEnable(w http.ResponseWriter, r *http.Request, status int, msg string, form map[string]string) {
	d := enableData{Formats: enableFormats, Modes: enableModes, ErrorModes: errorModes, Form: form}
	var list brokerTopicsResponse
	if err := c.api(r).do(r.Context(), http.MethodGet, "/management/v1/kafka/topics", nil, &list); err != nil {
		d.BrokerErr = err.Error()
	}
	d.Broker = list.Topics
	c.render(w, r, status, "enable", page{Title: "Enable a topic", Nav: "topics", Error: msg, Data: d})
}

// enable asks for confirmation, then sends POST /management/v1/topics
// with the form's topic, table, format, mode and error mode (the API
// checks them, and the principal's manage on the table's namespace) and
// shows the topic's page.
func (c *Console) enable(w http.ResponseWriter, r *http.Request) {
	form := map[string]string{}
	for _, k := range []string{"topic", "table", "format", "mode", "error-mode"} {
		form[k] = strings.TrimSpace(r.PostFormValue(k))
	}
	bad := ""
	switch {
	case form["topic"] == "":
		bad = "Pick a topic."
	case form["table"] == "":
		bad = "Name the table (namespace.name)."
	case !slices.Contains(enableFormats, form["format"]):
		bad = "Pick a format."
	case !slices.Contains(enableModes, form["mode"]):
		bad = "Pick a mode."
	case !slices.Contains(errorModes, form["error-mode"]):
		bad = "Pick an error mode."
	}
	if bad != "" {
		if c.refuseEnable(w, r) {
			return
		}
		c.renderEnable(w, r, http.StatusBadRequest, bad, form)
		return
	}
	if r.PostFormValue("confirmed") != "yes" {
		// No confirmation page for a principal that may not enable; a
		// confirmed post goes to the API, which decides.
		if c.refuseEnable(w, r) {
			return
		}
		q := confirmData{Question: "Enable topic " + form["topic"] + " into table " + form["table"] + " (format " + form["format"] + ", mode " + form["mode"] + ")?",
			Button: "Enable", Post: Prefix + "/enable", Cancel: Prefix + "/enable?topic=" + url.QueryEscape(form["topic"]), Fields: form}
		c.render(w, r, http.StatusOK, "confirm", page{Title: "Confirm", Nav: "topics", Data: q})
		return
	}
	cfg := topics.TopicConfig{Topic: form["topic"], Table: catalog.TableName(form["table"]), Format: form["format"],
		Mode: form["mode"], ErrorMode: form["error-mode"]}
	if err := c.api(r).do(r.Context(), http.MethodPost, "/management/v1/topics", cfg, nil); err != nil {
		if !mayEnable(r) {
			c.fail(w, r, err, "") // the API's refusal, without the form
			return
		}
		status := http.StatusInternalServerError
		if ae, ok := err.(*APIError); ok {
			status = ae.Status
		}
		c.renderEnable(w, r, status, err.Error(), form)
		return
	}
	http.Redirect(w, r, Prefix+"/topics/"+url.PathEscape(form["topic"])+"?done=enabled", http.StatusSeeOther)
}
