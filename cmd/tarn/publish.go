package main

import (
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/publish"
	"github.com/tarnhq/tarn/server"
)

// publishTimeout bounds `tarn publish resume|sync`: the publish runs
// while the request waits, a few calls to the target.
const publishTimeout = 2 * time.Minute

// publishList is the --publish flag: a JSON list of targets
// (publish.TargetConfig), also the YAML key `publish` and TARN_PUBLISH.
type publishList struct {
	raw     string
	targets []publish.TargetConfig
}

// String does not echo the list.
func (l *publishList) String() string {
	if l.raw == "" {
		return ""
	}
	return fmt.Sprintf("[%d publish targets]", len(l.targets))
}
func (l *publishList) Type() string { return "json" }
func (l *publishList) Set(v string) error {
	ts, err := publish.ParseTargets(v)
	if err != nil {
		return err
	}
	l.raw, l.targets = v, ts
	return nil
}

func newPublishCmd() *cobra.Command {
	c := &topicsClient{hc: &http.Client{Timeout: clientTimeout}}
	cmd := &cobra.Command{
		Use:   "publish",
		Short: "Show how tables are published to other catalogs (AWS Glue), resume a stopped table, or publish one now",
		Long: `Inspect and steer the publishing of a running tarn serve (its --publish
targets) through its management API (/management/v1/publish) at --server
(default ` + defaultServer + `, or TARN_SERVER). See docs/publish.md.`,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return c.setup(cmd)
		},
	}
	c.registerFlags(cmd.PersistentFlags())
	cmd.AddCommand(publishStatusCmd(c),
		publishActionCmd(c, "resume", "Restart publishing a table stopped by a conflict: Tarn's pointer replaces what the target's table holds",
			"/management/v1/publish/resume"),
		publishActionCmd(c, "sync", "Publish a table now, even when the target is current", "/management/v1/publish/sync"))
	return cmd
}

func publishStatusCmd(c *topicsClient) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "List the targets and their tables: state, what the target points at, lag, error",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st publish.Status
			if err := c.call(cmd.Context(), http.MethodGet, "/management/v1/publish", nil, &st); err != nil {
				return err
			}
			return printPublish(cmd.OutOrStdout(), c.output, st)
		},
	}
}

func publishActionCmd(c *topicsClient, name, short, path string) *cobra.Command {
	var tableName, target string
	cmd := &cobra.Command{
		Use:   name + " --table NAMESPACE.NAME [--target NAME]",
		Short: short,
		Example: "  tarn publish " + name + " --table sales.orders\n" +
			"  tarn publish " + name + " --table sales.orders --target athena",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.hc.Timeout = publishTimeout
			var st publish.Status
			req := server.PublishRequest{Table: catalog.TableName(tableName), Target: target}
			if err := c.call(cmd.Context(), http.MethodPost, path, req, &st); err != nil {
				return err
			}
			return printPublish(cmd.OutOrStdout(), c.output, st)
		},
	}
	f := cmd.Flags()
	f.StringVar(&tableName, "table", "", `table (required): namespace.name, or {"namespace":[...],"name":"..."} when a level or the name holds a dot`)
	f.StringVar(&target, "target", "", "publish target (default: every target)")
	_ = cmd.MarkFlagRequired("table")
	return cmd
}

func printPublish(w io.Writer, output string, st publish.Status) error {
	if output == "json" {
		return writeJSON(w, st)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tTABLE\tSTATE\tREMOTE\tSNAPSHOT\tLAG\tLAST PUBLISHED\tREASON")
	for _, t := range st.Targets {
		if len(t.Tables) == 0 {
			fmt.Fprintf(tw, "%s (%s)\t-\t\t\t\t\t\t\n", t.Name, t.Type)
		}
		for _, s := range t.Tables {
			reason := s.Conflict
			if reason == "" {
				reason = s.Unsupported
			}
			if reason == "" {
				reason = s.Error
			}
			fmt.Fprintf(tw, "%s (%s)\t%s\t%s\t%s\t%s\t%.1fs\t%s\t%s\n", t.Name, t.Type, s.Table, s.State, orDash(s.Remote),
				optInt(s.SnapshotID), s.LagSeconds, fmtTime(s.LastPublished), orDash(reason))
		}
	}
	return tw.Flush()
}
