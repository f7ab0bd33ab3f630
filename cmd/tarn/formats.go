package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tarnhq/tarn/delta"
)

func newFormatsCmd() *cobra.Command {
	c := &topicsClient{hc: &http.Client{Timeout: clientTimeout}}
	cmd := &cobra.Command{
		Use:   "formats NAMESPACE.TABLE",
		Short: "Show a table's formats: its Iceberg head and its Delta log (location, version, snapshot reflected, lag)",
		Long: `Show how a table is published, through the management API
(/management/v1/tables/{table}/formats) of a running tarn serve at --server
(default ` + defaultServer + `, or TARN_SERVER): its Iceberg metadata and
main's head, and its Delta Lake log — the Delta table's location, its newest
version, the Iceberg snapshot that version reflects, and how long the oldest
Iceberg commit not published yet has waited.`,
		Example: `  tarn formats sales.orders
  tarn formats sales.orders -o json`,
		Args: cobra.ExactArgs(1),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return c.setup(cmd)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var f delta.Formats
			if err := c.call(cmd.Context(), http.MethodGet, "/management/v1/tables/"+url.PathEscape(args[0])+"/formats", nil, &f); err != nil {
				return err
			}
			if c.output == "json" {
				return writeJSON(cmd.OutOrStdout(), f)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			d := f.Delta
			fmt.Fprintf(tw, "table\t%s\n", f.Table)
			fmt.Fprintf(tw, "iceberg metadata\t%s\n", f.Iceberg.MetadataLocation)
			fmt.Fprintf(tw, "iceberg snapshot\t%s\n", optInt(f.Iceberg.SnapshotID))
			fmt.Fprintf(tw, "delta enabled\t%t\n", d.Enabled)
			fmt.Fprintf(tw, "delta location\t%s\n", orDash(d.Location))
			fmt.Fprintf(tw, "delta version\t%s\n", optInt(d.Version))
			fmt.Fprintf(tw, "snapshot reflected\t%s (sequence number %s)\n", optInt(d.SnapshotID), optInt(d.SequenceNumber))
			fmt.Fprintf(tw, "lag\t%.1fs\n", d.LagSeconds)
			fmt.Fprintf(tw, "last published\t%s\n", fmtTime(d.LastPublished))
			if d.Protocol != nil {
				fmt.Fprintf(tw, "delta protocol\treader %d, writer %d%s\n", d.Protocol.MinReaderVersion, d.Protocol.MinWriterVersion,
					features(d.Protocol.WriterFeatures))
			}
			for _, o := range d.Omitted {
				fmt.Fprintf(tw, "column left out\t%s: %s\n", o.Column, o.Reason)
			}
			if d.Error != "" {
				fmt.Fprintf(tw, "error\t%s\n", d.Error)
			}
			return tw.Flush()
		},
	}
	c.registerFlags(cmd.PersistentFlags())
	return cmd
}

func optInt(v *int64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func features(fs []string) string {
	if len(fs) == 0 {
		return ""
	}
	return " (" + strings.Join(fs, ", ") + ")"
}
