package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dashboardFile is the Grafana dashboard of docs/operations.md.
var dashboardFile = filepath.Join(repoRoot, "docs", "grafana", "tarn.json")

// metricRef is a metric name in a PromQL expression; histograms are
// queried through their _bucket, _sum and _count series.
var metricRef = regexp.MustCompile(`\btarn_[a-z_]+\b`)

// TestGrafanaDashboard: every query of docs/grafana/tarn.json names
// metrics that Tarn registers (registeredMetrics), every panel queries the dashboard's Prometheus data source, and
// the topic panels follow the $topic variable. A renamed or removed
// metric fails here instead of leaving an empty panel.
func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource *struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	require.Equal(t, "Tarn", dash.Title)

	registered := registeredMetrics(t)
	queried := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotNil(t, p.Datasource, p.Title)
		assert.Equal(t, "${datasource}", p.Datasource.UID, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			names := metricRef.FindAllString(tg.Expr, -1)
			require.NotEmpty(t, names, "%s: %s", p.Title, tg.Expr)
			for _, n := range names {
				base := n
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(n, suffix); ok && registered[b] {
						base = b
					}
				}
				assert.True(t, registered[base], "%s: %s names %s, which no package registers", p.Title, tg.Expr, n)
				queried[base] = true
				if strings.HasPrefix(base, "tarn_topic_") {
					assert.Contains(t, tg.Expr, `topic=~"$topic"`, "%s: a topic panel follows $topic", p.Title)
				}
			}
		}
	}
	for _, want := range []string{"tarn_topic_lag_seconds", "tarn_topic_rows_total", "tarn_http_request_duration_seconds",
		"tarn_catalog_commit_conflicts_total", "tarn_maintenance_table_files", "tarn_publish_lag_seconds"} {
		assert.True(t, queried[want], "the dashboard has no panel on %s", want)
	}
}

// registeredMetrics is the set of metric names in the non-test Go files
// that import prometheus: "tarn_" literals that are the first argument of
// a call (prometheus.NewDesc, a package's own constructor) or the Name of
// a metric option struct.
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != repoRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		usesPrometheus := slices.ContainsFunc(f.Imports, func(s *ast.ImportSpec) bool {
			return s.Path.Value == `"github.com/prometheus/client_golang/prometheus"`
		})
		if !usesPrometheus {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				// prometheus.NewDesc(name, ...) and a package's own
				// constructor of that shape (catalog's counter(name, help)).
				if len(n.Args) > 0 {
					addLiteral(out, n.Args[0])
				}
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && strings.HasSuffix(sel.Sel.Name, "Opts") {
					for _, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
								addLiteral(out, kv.Value)
							}
						}
					}
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.True(t, out["tarn_http_requests_total"], "the walk found no metric: %v", out)
	return out
}

func addLiteral(out map[string]bool, e ast.Expr) {
	if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
		if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(s, "tarn_") {
			out[s] = true
		}
	}
}
