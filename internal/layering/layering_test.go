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
	// internal/errclass, the error classes, sits below everything: every
	// package's sentinels wrap one of its classes.
	"internal/errclass":   {},
	"spec":                {},
	"internal/strictjson": {"internal/errclass"},
	"internal/recovery":   {},
	// storage: a warehouse's FileIO, locations, S3 vending and signing.
	"storage":          {"internal/errclass", "spec"},
	"catalog":          {"internal/errclass", "spec", "storage", "internal/strictjson"},
	"catalog/bolt":     {"internal/errclass", "catalog", "internal/strictjson"},
	"catalog/postgres": {"internal/errclass", "catalog", "internal/strictjson"},
	"auth":             {"internal/errclass", "internal/strictjson"},
	// What ingest and maintenance share sits below both, so neither
	// imports the other: the offsets summary every snapshot carries
	// (whose sentinels may wrap catalog's classes) and the properties
	// owned tables are created with.
	"offsets":       {"internal/errclass", "catalog", "internal/strictjson"},
	"tabledefaults": {},

	"ingest/codec":        {"internal/errclass"},
	"ingest/internal/...": {"ingest/codec", "ingest/internal/..."},
	"ingest/avro":         {"internal/errclass", "ingest/codec", "ingest/internal/...", "ingest/connect"},
	"ingest/protobuf":     {"internal/errclass", "ingest/codec", "ingest/internal/..."},
	"ingest/jsonrow":      {"ingest/codec", "ingest/internal/..."},
	"ingest/jsonschema":   {"ingest/codec", "ingest/internal/...", "ingest/jsonrow"},
	"ingest/connect":      {"ingest/codec", "ingest/internal/...", "ingest/jsonrow"},
	"ingest/source":       {"internal/errclass", "internal/strictjson", "internal/recovery"},
	"ingest/sink":         {"internal/errclass", "catalog", "internal/strictjson", "offsets"},
	"maintenance":         {"internal/errclass", "catalog", "offsets", "tabledefaults", "internal/strictjson", "internal/recovery"},
	"ingest/upsert":       {"internal/errclass", "catalog", "ingest/codec", "ingest/sink"},
	"ingest/pipeline": {"internal/errclass", "catalog", "spec", "internal/strictjson", "internal/recovery", "ingest/codec", "ingest/avro", "ingest/protobuf", "ingest/jsonrow",
		"ingest/jsonschema", "ingest/connect", "ingest/source", "ingest/sink", "ingest/upsert", "offsets", "tabledefaults"},
	"ingest/topics": {"internal/errclass", "catalog", "internal/strictjson", "internal/recovery", "ingest/codec", "ingest/jsonrow", "ingest/pipeline", "ingest/source", "ingest/sink", "offsets"},
	"delta":         {"internal/errclass", "catalog", "internal/strictjson"},
	"publish/...":   {"internal/errclass", "catalog", "internal/strictjson", "delta"},
	"server":        {"internal/errclass", "spec", "internal/strictjson", "internal/recovery", "auth", "storage", "catalog", "ingest/topics", "maintenance", "delta", "publish/...", "ui"},
	// ui serves the console over the services the API uses, never a
	// store: server mounts it, so it cannot import server. It reads the
	// offsets summary (offsets) and the dead letter table's name
	// (ingest/pipeline) where the pipeline defines them.
	"ui":      {"internal/errclass", "spec", "auth", "catalog", "ingest/topics", "offsets", "ingest/pipeline", "maintenance", "delta", "publish/..."},
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
	return list(t, "Imports")
}

// deps lists each of the module's packages with the module's packages it
// depends on directly or through others (go list's Deps, what go list
// -deps prints; non-test files).
func deps(t *testing.T) map[string][]string {
	t.Helper()
	return list(t, "Deps")
}

// list runs go list over the module and returns, per package, the
// module's packages its field (Imports or Deps) names.
func list(t *testing.T, field string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .`+field+` " "}}`, module+"/...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	got := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20) // a command's Deps run long
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
	if err := sc.Err(); err != nil {
		t.Fatalf("go list output: %v", err)
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

// against lists, for packages (patterns as in allowed), the Tarn
// packages they must not depend on even through others: the arrows
// against the grain of cmd → server → ingest, maintenance → catalog
// (issue 21 item 1). What ingest and maintenance share (the offsets
// summary, the owned-table defaults) sits below both instead.
var against = map[string][]string{
	"storage":       {"catalog/...", "ingest/...", "maintenance", "delta", "server", "cmd/..."},
	"catalog/...":   {"ingest/...", "maintenance", "delta", "server", "cmd/..."},
	"offsets":       {"ingest/...", "maintenance", "server"},
	"tabledefaults": {"ingest/...", "maintenance", "server"},
	"maintenance":   {"ingest/...", "delta", "server", "cmd/..."},
	"ingest/...":    {"maintenance", "delta", "server", "cmd/..."},
}

// TestNoDependencyAgainstTheGrain: no package depends, directly or not,
// on one that against forbids it. TestImportDirections already refuses
// each direct import; this pins the directions themselves, so a new
// allowed entry cannot route around them.
func TestNoDependencyAgainstTheGrain(t *testing.T) {
	matched := map[string]bool{}
	for pkg, ds := range deps(t) {
		for p, forbidden := range against {
			if !match(p, pkg) {
				continue
			}
			matched[p] = true
			for _, d := range ds {
				if slices.ContainsFunc(forbidden, func(f string) bool { return match(f, d) }) {
					t.Errorf("%s depends on %s (against %q: not on %s)", pkg, d, p, strings.Join(forbidden, ", "))
				}
			}
		}
	}
	// Each pattern must name a package that exists, or it checks nothing.
	for p := range against {
		if !matched[p] {
			t.Errorf("against: %q matches no package", p)
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
