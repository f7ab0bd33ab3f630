package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/spec"
)

// defaultServer is the management API `tarn topics` talks to unless
// --server or TARN_SERVER says otherwise: tarn serve's default address.
const defaultServer = "http://" + defaultListen

// clientTimeout bounds one management request; an enable asks Kafka and
// the registry (each bounded to 15 s by the server) and creates a table.
const clientTimeout = time.Minute

// topicsClient is `tarn topics`: an HTTP client of the management API.
type topicsClient struct {
	server string
	output string
	hc     *http.Client
	auth   clientAuth
}

func newTopicsCmd() *cobra.Command {
	c := &topicsClient{hc: &http.Client{Timeout: clientTimeout}}
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "Enable, list, inspect, update, resume and disable materialized Kafka topics (and create Kafka topics)",
		Long: `Manage the Kafka topics a running tarn serve materializes into Iceberg
tables, through its management API (/management/v1/topics) at --server
(default ` + defaultServer + `, or TARN_SERVER).`,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return c.setup(cmd)
		},
	}
	c.registerFlags(cmd.PersistentFlags())
	cmd.AddCommand(c.enableCmd(), c.listCmd(), c.statusCmd(), c.updateCmd(), c.resumeCmd(), c.disableCmd(), topicsCreateCmd())
	return cmd
}

func (c *topicsClient) enableCmd() *cobra.Command {
	var (
		cfg        topics.TopicConfig
		schemaFile string
		deltaOn    bool
	)
	cmd := &cobra.Command{
		Use:   "enable TOPIC --table NAMESPACE.NAME",
		Short: "Materialize a Kafka topic into a new catalog-owned table",
		Example: `  tarn topics enable orders --table sales.orders
  tarn topics enable orders-eu --table '{"namespace":["sales.eu"],"name":"orders"}'
  tarn topics enable orders --table sales.orders --format avro --error-mode skip --target-lag-ms 1000 --start latest
  tarn topics enable orders --table sales.orders --delta
  tarn topics enable clicks --table web.clicks --format json --schema-file clicks-schema.json
  tarn topics enable customers --table crm.customers --mode upsert
  tarn topics enable pg.public.customers --table crm.customers --mode debezium --format connect-json
  tarn topics enable films --table media.films --format json --schema-file films.schema.json --field-name-matching case-insensitive --timestamp-unit us`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Topic = args[0]
			if cmd.Flags().Changed("partition-spec") {
				cfg.PartitionSpec = partitionSpecFlag(cfg.PartitionSpec)
			} else {
				cfg.PartitionSpec = nil
			}
			if cmd.Flags().Changed("delta") {
				cfg.Delta = &deltaOn
			}
			if schemaFile != "" {
				b, err := os.ReadFile(schemaFile)
				if err != nil {
					return fmt.Errorf("--schema-file: %w", err)
				}
				if !json.Valid(b) {
					return fmt.Errorf("--schema-file %s: not JSON", schemaFile)
				}
				cfg.Schema = b
			}
			var st topics.Status
			if err := c.call(cmd.Context(), http.MethodPost, "/management/v1/topics", cfg, &st); err != nil {
				return err
			}
			return c.printStatus(cmd.OutOrStdout(), st)
		},
	}
	f := cmd.Flags()
	f.StringVar((*string)(&cfg.Table), "table", "", `Iceberg table (created; required): namespace.name, or {"namespace":[...],"name":"..."} when a level or the name holds a dot`)
	f.StringVar(&cfg.Format, "format", "", "auto (default), avro, protobuf, json-schema, json, connect-json or raw")
	f.StringVar(&cfg.ErrorMode, "error-mode", "", "suspend (default), skip or dlq")
	f.StringVar(&cfg.Mode, "mode", "", "append (default: every record a row), upsert (one row per record key; a tombstone deletes it) or debezium (one row per key from Debezium change events; --format avro, connect-json or json)")
	f.StringVar(&cfg.Truncate, "truncate", "", "--mode debezium: what a truncate event does, delete (default: empty the table) or ignore")
	f.StringSliceVar(&cfg.KeyFields, "key-fields", nil, "--mode upsert or debezium: the value columns that are a row's key instead of the Kafka key (comma-separated)")
	f.BoolVar(&cfg.MetadataColumns, "metadata-columns", false, "--mode debezium: add the column _debezium {op, source_ts, ts} (the change's op, source.ts_ms and ts_ms)")
	f.StringVar(&cfg.Envelope, "envelope", "", "--mode debezium: the events' form, full (default: Debezium's envelope) or flattened (its ExtractNewRecordState transform)")
	f.StringArrayVar(&cfg.PartitionSpec, "partition-spec", nil, `partition field, repeatable (default day(_kafka.timestamp), for --mode upsert and debezium unpartitioned; "" or [] alone: unpartitioned)`)
	f.Int64Var(&cfg.TargetLagMs, "target-lag-ms", 0, "freshness target in ms (default 10000, at least 250)")
	f.Int64Var(&cfg.TargetFileSizeBytes, "target-file-size-bytes", 0, "flush at this buffered size (default 134217728)")
	f.StringVar(&cfg.Start, "start", "", "earliest (default) or latest")
	f.StringVar(&schemaFile, "schema-file", "", "Iceberg schema JSON of the table's columns (format json)")
	f.StringVar(&cfg.TimestampUnit, "timestamp-unit", "", "format json: unit of integers in timestamp columns, ms (default), us, ns or s")
	f.StringVar(&cfg.FieldNameMatching, "field-name-matching", "", "format json: exact (default) or case-insensitive")
	f.BoolVar(&deltaOn, "delta", false, "also publish the table as a Delta Lake table (tarn.delta.enabled)")
	_ = cmd.MarkFlagRequired("table")
	return cmd
}

// partitionSpecFlag reads --partition-spec values: a single empty value
// or [] means unpartitioned, as partition-spec [] does in the API.
func partitionSpecFlag(v []string) []string {
	if len(v) == 1 {
		switch s := strings.TrimSpace(v[0]); s {
		case "", "[]", `""`, "''":
			return []string{}
		}
	}
	return v
}

func (c *topicsClient) listCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the enabled topics with their state, lag and counts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out struct {
				Topics []topics.Status `json:"topics"`
			}
			if err := c.call(cmd.Context(), http.MethodGet, "/management/v1/topics", nil, &out); err != nil {
				return err
			}
			if c.output == "json" {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOPIC\tTABLE\tSTATE\tLAG (RECORDS)\tLAG (S)\tROWS\tCOMMITS\tERRORS\tLAST COMMIT")
			for _, st := range out.Topics {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", st.Topic, st.Table, st.State, fmtLagRecords(st.LagRecords),
					fmtLagSeconds(st.LagSeconds), st.Rows, st.Commits, sumErrors(st.Errors), fmtTime(st.LastCommit))
			}
			return tw.Flush()
		},
	}
}

func (c *topicsClient) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status TOPIC",
		Short: "Show a topic's state, reason, lag, counts, gaps and configuration",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var st topics.Status
			if err := c.call(cmd.Context(), http.MethodGet, "/management/v1/topics/"+url.PathEscape(args[0]), nil, &st); err != nil {
				return err
			}
			return c.printStatus(cmd.OutOrStdout(), st)
		},
	}
}

func (c *topicsClient) updateCmd() *cobra.Command {
	var (
		lag, size      int64
		mode           string
		specs          []string
		unit, matching string
		deltaOn        bool
	)
	cmd := &cobra.Command{
		Use:     "update TOPIC",
		Short:   "Change a topic's target lag, file size, error mode, partition spec, timestamp unit, field name matching or Delta output",
		Example: `  tarn topics update orders --error-mode skip --target-lag-ms 2000 --partition-spec 'day(_kafka.timestamp)' --partition-spec 'bucket(16, id)'`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var p topics.Patch
			f := cmd.Flags()
			if f.Changed("target-lag-ms") {
				p.TargetLagMs = &lag
			}
			if f.Changed("target-file-size-bytes") {
				p.TargetFileSizeBytes = &size
			}
			if f.Changed("error-mode") {
				p.ErrorMode = &mode
			}
			if f.Changed("partition-spec") {
				ps := partitionSpecFlag(specs)
				p.PartitionSpec = &ps
			}
			if f.Changed("timestamp-unit") {
				p.TimestampUnit = &unit
			}
			if f.Changed("field-name-matching") {
				p.FieldNameMatching = &matching
			}
			if f.Changed("delta") {
				p.Delta = &deltaOn
			}
			var st topics.Status
			if err := c.call(cmd.Context(), http.MethodPatch, "/management/v1/topics/"+url.PathEscape(args[0]), p, &st); err != nil {
				return err
			}
			return c.printStatus(cmd.OutOrStdout(), st)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&lag, "target-lag-ms", 0, "freshness target in ms (at least 250)")
	f.Int64Var(&size, "target-file-size-bytes", 0, "flush at this buffered size")
	f.StringVar(&mode, "error-mode", "", "suspend, skip or dlq")
	f.StringArrayVar(&specs, "partition-spec", nil, `partition field, repeatable; the new spec of the table ("" or [] alone: unpartitioned)`)
	f.StringVar(&unit, "timestamp-unit", "", "format json: unit of integers in timestamp columns, ms, us, ns or s")
	f.StringVar(&matching, "field-name-matching", "", "format json: exact or case-insensitive")
	f.BoolVar(&deltaOn, "delta", false, "publish the table as a Delta Lake table too (--delta=false stops; the log stays)")
	return cmd
}

func (c *topicsClient) resumeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "resume TOPIC",
		Short: "Resume a suspended topic from the record it stopped at",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var st topics.Status
			if err := c.call(cmd.Context(), http.MethodPost, "/management/v1/topics/"+url.PathEscape(args[0])+"/resume", nil, &st); err != nil {
				return err
			}
			return c.printStatus(cmd.OutOrStdout(), st)
		},
	}
}

func (c *topicsClient) disableCmd() *cobra.Command {
	var release bool
	cmd := &cobra.Command{
		Use:   "disable TOPIC [--release]",
		Short: "Stop materializing a topic; --release also hands its table over as an ordinary writable table",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/management/v1/topics/" + url.PathEscape(args[0])
			if release {
				path += "?release=true"
			}
			if err := c.call(cmd.Context(), http.MethodDelete, path, nil, nil); err != nil {
				return err
			}
			if release {
				fmt.Fprintf(cmd.OutOrStdout(), "topic %s disabled; its table is released (writable)\n", args[0])
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "topic %s disabled; its table stays owned by Tarn (read-only)\n", args[0])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&release, "release", false, "delete the topic's record and make its table an ordinary writable table")
	return cmd
}

// call sends body (JSON, when not nil) and decodes a 2xx response into
// out (when not nil). A non-2xx response becomes an error carrying the
// ErrorModel's message.
func (c *topicsClient) call(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+path, r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := c.auth.apply(ctx, c.hc, c.server, req); err != nil {
		return err
	}
	rsp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("tarn server at %s: %w", c.server, err)
	}
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	if err != nil {
		return err
	}
	if rsp.StatusCode/100 != 2 {
		var er spec.ErrorResponse
		if json.Unmarshal(b, &er) == nil && er.Error.Message != "" {
			return fmt.Errorf("%s (%d %s)", er.Error.Message, er.Error.Code, er.Error.Type)
		}
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, rsp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out == nil || len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return errors.Join(fmt.Errorf("%s %s: unexpected response", method, path), err)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printStatus prints one topic: JSON, or key: value lines.
func (c *topicsClient) printStatus(w io.Writer, st topics.Status) error {
	if c.output == "json" {
		return writeJSON(w, st)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	line("topic", st.Topic)
	line("table", st.Table)
	line("state", string(st.State))
	if st.Reason != "" {
		line("reason", st.Reason)
	}
	switch {
	case st.LagRecords == nil:
		line("lag", "unknown (Kafka not asked yet)")
	case st.LagSeconds == nil:
		line("lag", counted(*st.LagRecords, "record")+", age unknown (not fetched yet)")
	default:
		line("lag", fmt.Sprintf("%s, %.1f s", counted(*st.LagRecords, "record"), *st.LagSeconds))
	}
	line("last commit", fmtTime(st.LastCommit))
	line("rows", strconv.FormatInt(st.Rows, 10))
	line("bytes", strconv.FormatInt(st.Bytes, 10))
	line("files", strconv.FormatInt(st.Files, 10))
	line("commits", strconv.FormatInt(st.Commits, 10))
	line("commit conflicts", strconv.FormatInt(st.CommitConflicts, 10))
	line("buffered rows", strconv.Itoa(int(st.BufferedRows)))
	line("errors", fmtErrors(st.Errors))
	if len(st.Gaps) == 0 {
		line("gaps", "none")
	}
	for _, g := range st.Gaps {
		line("gap", fmt.Sprintf("partition %d offsets %d-%d (%s, detected %s)", g.Partition, g.FirstMissingOffset, g.LastMissingOffset, g.Cause, fmtTime(&g.Detected)))
	}
	line("offsets", fmtOffsets(st.Offsets))
	line("start offsets", fmtOffsets(st.StartOffsets))
	line("cluster", st.Cluster)
	line("format", st.Config.Format)
	line("error mode", st.Config.ErrorMode)
	line("mode", st.Config.Mode)
	if u := st.Upsert; u != nil {
		line("upserts", strconv.FormatInt(u.Upserts, 10))
		line("deletes", fmt.Sprintf("%d (%d of absent keys)", u.Deletes, u.NoopDeletes))
		line("rows deleted", strconv.FormatInt(u.RowsDeleted, 10))
		if st.Config.Mode == "debezium" {
			line("truncate", fmt.Sprintf("%s (%d applied)", st.Config.Truncate, u.Truncates))
		}
		line("key index", fmt.Sprintf("%d keys, %d key bytes", u.IndexKeys, u.IndexKeyBytes))
	}
	ps := strings.Join(st.Config.PartitionSpec, ", ")
	if len(st.Config.PartitionSpec) == 0 {
		ps = "unpartitioned"
	}
	line("partition spec", ps)
	line("target lag", fmt.Sprintf("%d ms", st.Config.TargetLagMs))
	line("target file size", fmt.Sprintf("%d bytes", st.Config.TargetFileSizeBytes))
	line("start", st.Config.Start)
	if st.Config.TimestampUnit != "" {
		line("timestamp unit", st.Config.TimestampUnit)
	}
	if st.Config.FieldNameMatching != "" {
		line("field name matching", st.Config.FieldNameMatching)
	}
	if c := st.Coverage; c != nil {
		line("unfilled columns", fmtList(c.UnfilledColumns))
		line("unmatched fields", fmtList(c.UnmatchedFields))
	}
	return tw.Flush()
}

// fmtList prints names comma-separated, "none" for none.
func fmtList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// fmtLagRecords and fmtLagSeconds print a lag, "-" while it is unknown.
func fmtLagRecords(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

func fmtLagSeconds(s *float64) string {
	if s == nil {
		return "-"
	}
	return strconv.FormatFloat(*s, 'f', 1, 64)
}

// fmtOffsets prints partition=offset pairs by partition, "-" for none.
func fmtOffsets(m map[int32]int64) string {
	if len(m) == 0 {
		return "-"
	}
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%d=%d", p, m[p]))
	}
	return strings.Join(parts, " ")
}

func sumErrors(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func fmtErrors(m map[string]int64) string {
	if len(m) == 0 {
		return "0"
	}
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format(time.RFC3339)
}

// counted is n and noun, the noun plural unless n is 1 or -1 ("1 record",
// "0 records", "3 partitions"); nouns here take an s.
func counted[N int | int32 | int64](n N, noun string) string {
	if n == 1 || n == -1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
