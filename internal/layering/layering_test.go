package layering

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tarnhq/tarn"

// allowed lists, for each of Tarn's packages (a trailing "/..." also
// covers the packages below it), the Tarn packages it may import
// directly. A package missing here fails the test: a new room states its
// place in docs/architecture.md and here. The planned rooms of DESIGN.md
// are listed before they exist, so that their first commit already obeys
// the layering.
var allowed = map[string][]string{
	"spec":                {},
	"internal/strictjson": {},
	"internal/recovery":   {},
	// storage: a warehouse's FileIO, locations, S3 vending and signing.
	"storage":          {"spec"},
	"catalog":          {"spec", "storage", "internal/strictjson"},
	"catalog/bolt":     {"catalog", "internal/strictjson"},
	"catalog/postgres": {"catalog", "internal/strictjson"},
	"auth":             {"internal/strictjson"},

	"ingest/codec":        {},
	"ingest/internal/...": {"ingest/codec", "ingest/internal/..."},
	"ingest/avro":         {"ingest/codec", "ingest/internal/...", "ingest/connect"},
	"ingest/protobuf":     {"ingest/codec", "ingest/internal/..."},
	"ingest/jsonrow":      {"ingest/codec", "ingest/internal/..."},
	"ingest/jsonschema":   {"ingest/codec", "ingest/internal/...", "ingest/jsonrow"},
	"ingest/connect":      {"ingest/codec", "ingest/internal/...", "ingest/jsonrow"},
	"ingest/source":       {"internal/strictjson", "internal/recovery"},
	"ingest/sink":         {"catalog", "internal/strictjson"},
	// maintenance reads the ingest offsets summary from ingest/sink; the
	// arrow is to go (issue 21 item 1).
	"maintenance":   {"catalog", "ingest/sink", "internal/strictjson", "internal/recovery"},
	"ingest/upsert": {"catalog", "ingest/codec", "ingest/sink"},
	// ingest/pipeline imports maintenance for owned tables' defaults; the
	// arrow is to go (issue 21 item 1).
	"ingest/pipeline": {"catalog", "spec", "internal/strictjson", "internal/recovery", "ingest/codec", "ingest/avro", "ingest/protobuf", "ingest/jsonrow",
		"ingest/jsonschema", "ingest/connect", "ingest/source", "ingest/sink", "ingest/upsert", "maintenance"},
	"ingest/topics": {"catalog", "internal/strictjson", "internal/recovery", "ingest/codec", "ingest/jsonrow", "ingest/pipeline", "ingest/source", "ingest/sink"},
	"delta":         {"catalog", "internal/strictjson"},
	"publish/...":   {"catalog", "internal/strictjson", "delta"},
	"server":        {"spec", "internal/strictjson", "internal/recovery", "auth", "storage", "catalog", "ingest/topics", "maintenance", "delta", "publish/...", "ui"},
	// ui serves the console over the services the API uses, never a
	// store: server mounts it, so it cannot import server.
	"ui":      {"spec", "auth", "catalog", "ingest/topics", "maintenance", "delta", "publish/..."}, // planned
	"cmd/...": {"..."},

	// Helpers for tests, benchmarks and the demo sit beside the layers
	// and may use any of them; no product package lists them, so nothing
	// of the product imports them. Test files are not checked.
	"internal/demo":        {"internal/produce"},
	"internal/produce":     {"ingest/...", "internal/strictjson"},
	"internal/sample":      {"internal/demo", "internal/testenv"},
	"internal/test...":     {"..."},
	"internal/arrowtest":   {},
	"internal/connecttest": {"..."},
	"internal/testpython":  {"..."},
	"catalog/storetest":    {"catalog"},
	"bench/...":            {"..."},
	"scripts/...":          {"..."},
	"internal/layering":    {},
}

// match reports whether rel (a package path relative to the module)
// matches pattern: exactly, or below a pattern ending in "/..." or "...".
func match(pattern, rel string) bool {
	if pattern == "..." {
		return true
	}
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == p || strings.HasPrefix(rel, p+"/")
	}
	if p, ok := strings.CutSuffix(pattern, "..."); ok {
		return strings.HasPrefix(rel, p)
	}
	return rel == pattern
}

// rule returns the most specific allowed entry for rel: an exact one
// before a pattern, and the longest pattern first.
func rule(rel string) (string, []string, bool) {
	if deps, ok := allowed[rel]; ok {
		return rel, deps, true
	}
	best := ""
	for p := range allowed {
		if match(p, rel) && len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		return "", nil, false
	}
	return best, allowed[best], true
}

// imports lists each of the module's packages (relative path) with the
// module's packages its non-test files import directly.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	got := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		pkg := rel(f[0])
		var deps []string
		for _, d := range f[1:] {
			if d == module || strings.HasPrefix(d, module+"/") {
				if r := rel(d); r != pkg && !slices.Contains(deps, r) {
					deps = append(deps, r)
				}
			}
		}
		got[pkg] = deps
	}
	if len(got) < 10 {
		t.Fatalf("go list found only %d packages:\n%s", len(got), out)
	}
	return got
}

func rel(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "/") }

// TestImportDirections: every import of one of Tarn's packages by
// another (non-test code) is one that allowed lists; a package in no
// layer fails too.
func TestImportDirections(t *testing.T) {
	for pkg, deps := range imports(t) {
		name, may, ok := rule(pkg)
		if !ok {
			t.Errorf("%s is in no layer: add it to allowed (and to docs/architecture.md)", pkg)
			continue
		}
		for _, d := range deps {
			if !slices.ContainsFunc(may, func(p string) bool { return match(p, d) }) {
				t.Errorf("%s imports %s: not allowed by %q (allowed: %s)", pkg, d, name, strings.Join(may, ", "))
			}
		}
	}
}

// TestMatch pins the pattern rules the tests above rely on.
func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, rel string
		want         bool
	}{
		{"catalog", "catalog", true},
		{"catalog", "catalog/bolt", false},
		{"ingest/...", "ingest/avro", true},
		{"ingest/...", "ingest", true},
		{"ingest/...", "ingestx", false},
		{"internal/test...", "internal/testkafka", true},
		{"internal/test...", "internal/strictjson", false},
		{"...", "anything", true},
	} {
		if got := match(c.pattern, c.rel); got != c.want {
			t.Errorf("match(%q, %q) = %v", c.pattern, c.rel, got)
		}
	}
	if name, _, _ := rule("catalog/bolt"); name != "catalog/bolt" {
		t.Errorf("rule(catalog/bolt) = %q", name)
	}
	if name, _, _ := rule("internal/testkafka"); name != "internal/test..." {
		t.Errorf("rule(internal/testkafka) = %q", name)
	}
}
