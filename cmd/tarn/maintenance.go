package main

import (
	"fmt"
	"net/http"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/server"
)

// maintenanceRunTimeout bounds `tarn maintenance run`: the jobs run while
// the request waits, and compacting a large partition takes minutes.
const maintenanceRunTimeout = 30 * time.Minute

func newMaintenanceCmd() *cobra.Command {
	c := &topicsClient{hc: &http.Client{Timeout: clientTimeout}}
	cmd := &cobra.Command{
		Use:   "maintenance",
		Short: "Show table maintenance (compaction, snapshot expiry, orphan removal) or run it now",
		Long: `Inspect and trigger the maintenance a running tarn serve does on its tables,
through its management API (/management/v1/maintenance) at --server
(default ` + defaultServer + `, or TARN_SERVER).`,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return c.setup(cmd)
		},
	}
	c.registerFlags(cmd.PersistentFlags())
	cmd.AddCommand(maintenanceStatusCmd(c), maintenanceRunCmd(c))
	return cmd
}

func maintenanceStatusCmd(c *topicsClient) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "List the maintained tables with their files, snapshots and last jobs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st maintenance.Status
			if err := c.call(cmd.Context(), http.MethodGet, "/management/v1/maintenance", nil, &st); err != nil {
				return err
			}
			if c.output == "json" {
				return writeJSON(cmd.OutOrStdout(), st)
			}
			w := cmd.OutOrStdout()
			if st.Enabled {
				fmt.Fprintf(w, "maintenance every %s, %d tables at a time; last pass %s\n",
					time.Duration(st.IntervalMs)*time.Millisecond, st.Concurrency, fmtTime(st.LastPass))
			} else {
				fmt.Fprintln(w, "periodic maintenance off (runs on request only)")
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TABLE\tENABLED\tFILES\tBYTES\tSNAPSHOTS\tJOB\tLAST RUN\tRESULT")
			for _, ts := range st.Tables {
				jobs := make([]string, 0, len(ts.Jobs))
				for j := range ts.Jobs {
					jobs = append(jobs, j)
				}
				sort.Strings(jobs)
				if len(jobs) == 0 {
					jobs = []string{""}
				}
				for i, j := range jobs {
					name, enabled, files, bytes, snaps := "", "", "", "", ""
					if i == 0 {
						name, enabled = ts.Table, fmt.Sprint(ts.Enabled)
						files, bytes, snaps = fmt.Sprint(ts.Files), fmt.Sprint(ts.Bytes), fmt.Sprint(ts.Snapshots)
					}
					js := ts.Jobs[j]
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, enabled, files, bytes, snaps, j, fmtTime(js.LastRun), jobSummary(js))
				}
			}
			return tw.Flush()
		},
	}
}

func maintenanceRunCmd(c *topicsClient) *cobra.Command {
	var (
		tableName string
		jobs      []string
	)
	cmd := &cobra.Command{
		Use:   "run --table NAMESPACE.NAME [--job compact|tag|expire|manifests|orphans]...",
		Short: "Run maintenance jobs on one table now (all of them by default) and print what they did",
		Example: `  tarn maintenance run --table sales.orders
  tarn maintenance run --table sales.orders --job compact --job expire
  tarn maintenance run --table '{"namespace":["sales.eu"],"name":"orders"}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.hc.Timeout = maintenanceRunTimeout
			var out server.RunMaintenanceResponse
			req := server.RunMaintenanceRequest{Table: catalog.TableName(tableName), Jobs: jobs}
			if err := c.call(cmd.Context(), http.MethodPost, "/management/v1/maintenance/run", req, &out); err != nil {
				return err
			}
			if c.output == "json" {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TABLE\tJOB\tFILES BEFORE\tFILES AFTER\tDURATION\tRESULT")
			for _, r := range out.Results {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", r.Table, r.Job, r.FilesBefore, r.FilesAfter,
					time.Duration(r.DurationMs)*time.Millisecond, resultSummary(r))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&tableName, "table", "", `table (required): namespace.name, or {"namespace":[...],"name":"..."} when a level or the name holds a dot`)
	f.StringArrayVar(&jobs, "job", nil, "job to run, repeatable: compact, tag, expire, manifests or orphans (default all)")
	_ = cmd.MarkFlagRequired("table")
	return cmd
}

func jobSummary(js maintenance.JobStatus) string {
	switch {
	case js.LastError != "":
		return "error: " + js.LastError
	case js.LastResult != nil:
		return resultSummary(*js.LastResult)
	}
	return "-"
}

// resultSummary says in a few words what a job run did.
func resultSummary(r maintenance.Result) string {
	if r.Skipped != "" {
		return "skipped: " + r.Skipped
	}
	switch r.Job {
	case maintenance.JobCompact:
		return fmt.Sprintf("%d files → %d (%d bytes read)", r.FilesRewritten, r.FilesAdded, r.BytesRewritten)
	case maintenance.JobTag:
		return "tagged " + r.Tag
	case maintenance.JobExpire:
		return fmt.Sprintf("%d snapshots expired", r.SnapshotsExpired)
	case maintenance.JobManifests:
		return fmt.Sprintf("%d manifests → %d", r.ManifestsBefore, r.ManifestsAfter)
	case maintenance.JobOrphans:
		s := fmt.Sprintf("%d orphans removed (%d bytes)", r.OrphansRemoved, r.OrphanBytes)
		if r.OrphansHeld > 0 {
			s += fmt.Sprintf(", %d in flight kept", r.OrphansHeld)
		}
		return s
	}
	return "done"
}
