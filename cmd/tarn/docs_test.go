package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is the repository root, seen from cmd/tarn.
const repoRoot = "../.."

// docFiles are the user-facing documents: README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return append([]string{filepath.Join(repoRoot, "README.md")}, files...)
}

// mdLine is one line of a markdown file with its place.
type mdLine struct {
	text string
	// fence is the info string of the fenced code block the line is in
	// ("" outside one, "-" for a block without info string).
	fence string
	no    int
}

// readMarkdown returns the lines of a markdown file, marking those in
// fenced code blocks.
func readMarkdown(t *testing.T, path string) []mdLine {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []mdLine
	fence := ""
	sc := bufio.NewScanner(f)
	for no := 1; sc.Scan(); no++ {
		text := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(text), "```") {
			if fence == "" {
				fence = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "```"))
				if fence == "" {
					fence = "-"
				}
			} else {
				fence = ""
			}
			continue
		}
		out = append(out, mdLine{text: text, fence: fence, no: no})
	}
	require.NoError(t, sc.Err())
	return out
}

// allCommands walks the command tree, root first.
func allCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		if sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		out = append(out, allCommands(sub)...)
	}
	return out
}

// cmdPath is a command's path without the root's name: "topics enable".
func cmdPath(c *cobra.Command) string {
	return strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), "tarn"), " ")
}

// clientCommands share the management clients' persistent flags
// (docs/configuration.md "Management clients").
var clientCommands = []string{"topics", "maintenance", "formats", "publish", "principals", "roles", "grants"}

const clientsSection = "Management clients"

// flagRow is a table row of docs/configuration.md naming flags.
type flagRow struct {
	section string
	cells   map[string]string // by header, lower case
	line    int
}

var (
	backticked = regexp.MustCompile("`([^`]*)`")
	flagToken  = regexp.MustCompile(`(?:^|[^\w-])(--[a-z0-9][a-z0-9-]*)`)
	tarnEnv    = regexp.MustCompile(`\bTARN_[A-Z0-9_]+\b`)
)

// parseConfigurationDoc reads the flag tables of docs/configuration.md:
// rows by section and flag. A section is the nearest heading naming a
// command ("## tarn serve", "### tarn topics enable") or "Management
// clients"; subheadings naming no command belong to the section above.
func parseConfigurationDoc(t *testing.T, lines []mdLine) map[string]map[string]flagRow {
	t.Helper()
	rows := map[string]map[string]flagRow{}
	section := ""
	var header []string
	for _, l := range lines {
		if l.fence != "" {
			continue
		}
		if h, ok := strings.CutPrefix(l.text, "## "); ok {
			section = ""
			if p, ok := strings.CutPrefix(h, "tarn "); ok {
				section = p
			} else if h == clientsSection {
				section = clientsSection
			}
			continue
		}
		if h, ok := strings.CutPrefix(l.text, "### "); ok {
			if p, ok := strings.CutPrefix(h, "tarn "); ok {
				section = p
			}
			continue
		}
		if !strings.HasPrefix(l.text, "|") {
			header = nil
			continue
		}
		cells := strings.Split(strings.Trim(l.text, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if header == nil {
			header = cells
			for i := range header {
				header[i] = strings.ToLower(header[i])
			}
			continue
		}
		if strings.HasPrefix(cells[0], "---") || len(header) == 0 || header[0] != "flag" {
			continue
		}
		require.Len(t, cells, len(header), "docs/configuration.md:%d: cells", l.no)
		byHeader := map[string]string{}
		for i, h := range header {
			byHeader[h] = cells[i]
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			name, ok := strings.CutPrefix(m[1], "--")
			if !ok {
				continue // the shorthand -o
			}
			require.NotEmpty(t, section, "docs/configuration.md:%d: flag %s outside a command's section", l.no, m[1])
			if rows[section] == nil {
				rows[section] = map[string]flagRow{}
			}
			rows[section][name] = flagRow{section: section, cells: byHeader, line: l.no}
		}
	}
	return rows
}

// sameDefault reports whether a documented default equals a flag's.
func sameDefault(f *pflag.Flag, doc string) bool {
	if doc == f.DefValue {
		return true
	}
	if f.Value.Type() == "duration" {
		a, err1 := time.ParseDuration(doc)
		b, err2 := time.ParseDuration(f.DefValue)
		return err1 == nil && err2 == nil && a == b
	}
	return false
}

// TestConfigurationReference holds docs/configuration.md against the
// real flags: every flag of every command has a row in its command's
// section; `tarn serve`'s rows name the flag's TARN_* variable and YAML
// key; a default cell starting with a backticked value shows the flag's
// own default; and the page names no flag and no TARN_* variable that
// does not exist.
func TestConfigurationReference(t *testing.T) {
	lines := readMarkdown(t, filepath.Join(repoRoot, "docs", "configuration.md"))
	rows := parseConfigurationDoc(t, lines)
	root := newRootCmd()

	known := map[string]bool{} // every flag of the tree
	envs := map[string]bool{rootCredentialEnv: true, pprofListenEnv: true}
	owners := map[string][]string{} // section → the commands whose flags it documents
	for _, c := range allCommands(root) {
		path := cmdPath(c)
		check := func(f *pflag.Flag, section string) {
			if f.Name == "help" {
				return
			}
			known[f.Name] = true
			owners[section] = append(owners[section], path)
			row, ok := rows[section][f.Name]
			if !assert.True(t, ok, "docs/configuration.md: no row for --%s of tarn %s in section %q", f.Name, path, section) {
				return
			}
			if path == "serve" {
				envs[envName(f.Name)] = true
				assert.Equal(t, "`"+envName(f.Name)+"`", row.cells["env"], "line %d: env of --%s", row.line, f.Name)
				if f.Name == "config" { // the file names no file
					assert.Equal(t, "—", row.cells["yaml"], "line %d: YAML key of --config", row.line)
				} else {
					assert.Contains(t, row.cells["yaml"], "`"+f.Name+"`", "line %d: YAML key of --%s", row.line, f.Name)
				}
			} else if env, ok := row.cells["env"]; ok && env != "—" {
				envs[envName(f.Name)] = true
				assert.Equal(t, "`"+envName(f.Name)+"`", env, "line %d: env of --%s", row.line, f.Name)
			}
			if m := backticked.FindStringSubmatch(row.cells["default"]); m != nil && strings.HasPrefix(row.cells["default"], "`") {
				assert.True(t, sameDefault(f, m[1]), "line %d: default of --%s of tarn %s: the page says %q, the flag %q",
					row.line, f.Name, path, m[1], f.DefValue)
			}
		}
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { check(f, path) })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) {
			if slices.Contains(clientCommands, path) {
				check(f, clientsSection)
			} else {
				check(f, path)
			}
		})
	}
	for section, byFlag := range rows {
		for name, row := range byFlag {
			found := false
			for _, path := range owners[section] {
				c, _, err := root.Find(strings.Fields(path))
				if err == nil && c.Flags().Lookup(name) != nil {
					found = true
				}
			}
			assert.True(t, found, "docs/configuration.md:%d: --%s is not a flag of section %q", row.line, name, section)
		}
	}
	for _, l := range lines {
		for _, m := range flagToken.FindAllStringSubmatch(l.text, -1) {
			if strings.HasSuffix(m[1], "-") { // a family: --kafka-tls-*
				continue
			}
			assert.True(t, known[strings.TrimPrefix(m[1], "--")], "docs/configuration.md:%d: %s is no flag of tarn", l.no, m[1])
		}
		for _, e := range tarnEnv.FindAllString(l.text, -1) {
			assert.True(t, envs[e], "docs/configuration.md:%d: %s is no variable tarn reads", l.no, e)
		}
	}
}

// shellWords splits a shell command line into words: quotes group and
// are removed, operators (| || && ; &) are words of their own, and a
// comment ends the line.
func shellWords(line string) []string {
	var (
		words []string
		cur   strings.Builder
		quote rune
		in    bool
	)
	flush := func() {
		if in {
			words = append(words, cur.String())
		}
		cur.Reset()
		in = false
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '#' && !in:
			flush()
			return words
		case unicode.IsSpace(r):
			flush()
		case r == '&' && i > 0 && (rs[i-1] == '>' || rs[i-1] == '<'): // 2>&1
			cur.WriteRune(r)
		case r == '|' || r == '&' || r == ';':
			flush()
			op := string(r)
			if i+1 < len(rs) && (rs[i+1] == '|' || rs[i+1] == '&') {
				op += string(rs[i+1])
				i++
			}
			words = append(words, op)
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	flush()
	return words
}

// tarnInvocations returns the argument lists of the tarn commands in a
// shell line: a word tarn, bin/tarn or "go run ./cmd/tarn" in command
// position, its arguments up to the next operator, without redirections.
func tarnInvocations(line string) [][]string {
	words := shellWords(line)
	var out [][]string
	start := true
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch w {
		case "|", "||", "&&", ";", "&", "until", "while", "if", "then", "do", "!", "time":
			start = true
			continue
		}
		if !start {
			continue
		}
		start = false
		n := 0
		switch {
		case w == "tarn" || w == "bin/tarn":
			n = 1
		case w == "go" && i+2 < len(words) && words[i+1] == "run" && words[i+2] == "./cmd/tarn":
			n = 3
		default:
			continue
		}
		var args []string
		for j := i + n; j < len(words); j++ {
			a := words[j]
			if slices.Contains([]string{"|", "||", "&&", ";", "&"}, a) {
				break
			}
			if strings.HasPrefix(a, ">") || strings.HasPrefix(a, "<") || strings.HasPrefix(a, "2>") {
				if a == ">" || a == "<" || a == "2>" {
					j++ // the target is the next word
				}
				continue
			}
			args = append(args, a)
		}
		out = append(out, args)
		i += n - 1
	}
	return out
}

// TestDocsCommandLines parses every tarn command line in the shell
// blocks of README.md and docs/*.md with the real command tree: the
// subcommand exists, every flag exists and takes its value, positional
// arguments and required flags are there.
func TestDocsCommandLines(t *testing.T) {
	seen := 0
	for _, path := range docFiles(t) {
		var joined string
		var first int
		for _, l := range readMarkdown(t, path) {
			if l.fence != "sh" && l.fence != "bash" && l.fence != "-" {
				continue
			}
			if joined == "" {
				first = l.no
			}
			text := strings.TrimPrefix(strings.TrimSpace(l.text), "$ ")
			if s, ok := strings.CutSuffix(text, `\`); ok {
				joined += s + " "
				continue
			}
			joined += text
			for _, args := range tarnInvocations(joined) {
				seen++
				root := newRootCmd()
				c, rest, err := root.Find(args)
				where := fmt.Sprintf("%s:%d: tarn %s", filepath.Base(path), first, strings.Join(args, " "))
				if !assert.NoError(t, err, where) {
					continue
				}
				if !assert.NotEqual(t, root, c, "%s: no such command", where) {
					continue
				}
				if !assert.NoError(t, c.ParseFlags(rest), where) {
					continue
				}
				assert.NoError(t, c.ValidateArgs(c.Flags().Args()), where)
				assert.NoError(t, c.ValidateRequiredFlags(), where)
			}
			joined = ""
		}
	}
	assert.Greater(t, seen, 10, "tarn command lines found in the docs")
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	slugDrop  = regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
	mdHeading = regexp.MustCompile(`^#{1,6} (.*)$`)
)

// slugs are the anchors GitHub gives a markdown file's headings:
// lower case, punctuation other than - and _ removed, spaces as -, a
// repeated slug suffixed -1, -2, ...
func slugs(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, l := range readMarkdown(t, path) {
		m := mdHeading.FindStringSubmatch(l.text)
		if l.fence != "" || m == nil {
			continue
		}
		s := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		base := s
		for n := 1; out[s]; n++ {
			s = fmt.Sprintf("%s-%d", base, n)
		}
		out[s] = true
	}
	return out
}

// TestDocsLinks checks every relative link of README.md and docs/*.md:
// the file exists and, for a markdown target, so does the anchor.
func TestDocsLinks(t *testing.T) {
	for _, path := range docFiles(t) {
		for _, l := range readMarkdown(t, path) {
			if l.fence != "" {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(l.text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				resolved := path
				if file != "" {
					resolved = filepath.Join(filepath.Dir(path), file)
				}
				where := fmt.Sprintf("%s:%d: %s", filepath.Base(path), l.no, target)
				if _, err := os.Stat(resolved); !assert.NoError(t, err, where) {
					continue
				}
				if anchor != "" && strings.HasSuffix(resolved, ".md") {
					assert.True(t, slugs(t, resolved)[anchor], "%s: no heading with this anchor", where)
				}
			}
		}
	}
}
