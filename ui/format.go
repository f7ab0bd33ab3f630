package ui

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"count":   count,
	"bytes":   bytesIEC,
	"seconds": seconds,
	"ago":     func(t time.Time) string { return ago(time.Now(), t) },
	"utc":     func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"iso":     func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"f1":      func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"ident":   identHTML,
}

// count is n with thin spaces between thousands (12 345 678), readable
// in every locale.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune('\u202f')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// bytesIEC is n bytes in the largest binary unit that keeps it ≥ 1
// (1.5 MiB).
func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// seconds is a duration of s seconds for people: 0.4 s, 12 s, 3 min 5 s,
// 2 h 10 min.
func seconds(s float64) string {
	switch {
	case s < 10:
		return strconv.FormatFloat(math.Round(s*10)/10, 'f', -1, 64) + " s"
	case s < 120:
		return fmt.Sprintf("%.0f s", s)
	case s < 7200:
		return fmt.Sprintf("%d min %d s", int(s)/60, int(s)%60)
	case s < 172800:
		return fmt.Sprintf("%d h %d min", int(s)/3600, int(s)%3600/60)
	}
	return fmt.Sprintf("%d d %d h", int(s)/86400, int(s)%86400/3600)
}

// ago is how long before now t was ("12 s ago"; "in 3 s" for a clock
// ahead).
func ago(now, t time.Time) string {
	d := now.Sub(t).Seconds()
	if d < 0 {
		return "in " + seconds(-d)
	}
	return seconds(d) + " ago"
}

// identHTML shows a namespace's levels (and a table's or view's name,
// when not empty) each in its own box, separated by a "›" the screen
// reader skips: a level may hold a dot, so ["a.b"] and ["a", "b"] must
// not both read "a.b" (catalog.FormatIdent's JSON form is exact but
// unreadable on a page).
func identHTML(levels []string, name string) template.HTML {
	var b strings.Builder
	b.WriteString(`<span class="ident">`)
	parts := append(slices.Clone(levels), name)
	if name == "" {
		parts = parts[:len(parts)-1]
	}
	for i, l := range parts {
		if i > 0 {
			b.WriteString(`<span class="sep" aria-hidden="true">›</span>`)
		}
		cls := "lvl"
		if name != "" && i == len(parts)-1 {
			cls = "lvl name"
		}
		b.WriteString(`<span class="` + cls + `">` + template.HTMLEscapeString(l) + `</span>`)
	}
	b.WriteString(`</span>`)
	return template.HTML(b.String())
}

// identText is identHTML as plain text (a page's <title>).
func identText(levels []string, name string) string {
	parts := slices.Clone(levels)
	if name != "" {
		parts = append(parts, name)
	}
	return strings.Join(parts, " › ")
}
