package ui

import (
	"context"
	"errors"
	"net/http"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/publish"
)

// tableState is what a table's page shows beside its metadata, each
// part read from the management API as the signed-in principal: its
// maintenance history (GET /management/v1/maintenance), its formats
// (GET /management/v1/tables/{table}/formats) and its publishing state
// (GET /management/v1/publish). A part the server does not serve (503:
// not configured) or the principal may not read says why instead.
type tableState struct {
	Maintenance    *maintenance.TableStatus
	MaintenanceJob []jobRow
	MaintenanceMsg string // why there is no maintenance state

	Formats    *delta.Formats
	FormatsMsg string

	Publish    []publishRow
	PublishMsg string
}

// jobRow is one maintenance job's history on the table.
type jobRow struct {
	Job string
	maintenance.JobStatus
}

// publishRow is the table's state in one publish target.
type publishRow struct {
	Target, Type string
	publish.TableStatus
}

// unavailable is why part of a page could not be read: the API's own
// message for 503 (not configured) and 403 (not allowed), which are
// normal answers; nil for any other error, which fails the page.
func unavailable(err error) (string, bool) {
	var ae *APIError
	if errors.As(err, &ae) && (ae.Status == http.StatusServiceUnavailable || ae.Status == http.StatusForbidden) {
		msg := ae.Message
		if msg == "" {
			msg = http.StatusText(ae.Status)
		}
		return msg, true
	}
	return "", false
}

// tableState reads table id's maintenance, formats and publishing
// state. Errors: an API answer other than 2xx, 403 and 503.
func (c *Console) tableState(ctx context.Context, api apiClient, id catalog.Ident) (tableState, error) {
	var d tableState
	name := catalog.FormatIdent(id)

	var ms maintenance.Status
	if err := api.do(ctx, http.MethodGet, "/management/v1/maintenance", nil, &ms); err != nil {
		msg, ok := unavailable(err)
		if !ok {
			return d, err
		}
		d.MaintenanceMsg = msg
	} else {
		for i := range ms.Tables {
			if ms.Tables[i].Table == name {
				d.Maintenance = &ms.Tables[i]
			}
		}
		if d.Maintenance == nil {
			d.MaintenanceMsg = "No maintenance job has run on this table since Tarn started."
		} else {
			for _, j := range maintenance.Jobs {
				if js, ok := d.Maintenance.Jobs[j]; ok {
					d.MaintenanceJob = append(d.MaintenanceJob, jobRow{Job: j, JobStatus: js})
				}
			}
		}
	}

	var f delta.Formats
	if err := api.do(ctx, http.MethodGet, "/management/v1/tables/"+escapeLevel(name)+"/formats", nil, &f); err != nil {
		msg, ok := unavailable(err)
		if !ok {
			return d, err
		}
		d.FormatsMsg = msg
	} else {
		d.Formats = &f
	}

	var ps publish.Status
	if err := api.do(ctx, http.MethodGet, "/management/v1/publish", nil, &ps); err != nil {
		msg, ok := unavailable(err)
		if !ok {
			return d, err
		}
		d.PublishMsg = msg
	} else {
		for _, t := range ps.Targets {
			for _, ts := range t.Tables {
				if ts.Table == name {
					d.Publish = append(d.Publish, publishRow{Target: t.Name, Type: t.Type, TableStatus: ts})
				}
			}
		}
		if d.Publish == nil {
			d.PublishMsg = "No publish target covers this table."
		}
	}
	return d, nil
}
