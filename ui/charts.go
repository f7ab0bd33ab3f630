package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// chart is one series of a topic's history drawn as an inline SVG line
// (templates/topic.html): no script, no library, no CDN.
type chart struct {
	ID, Title string
	// Points is the polyline's points in the viewBox (chartW × chartH),
	// time left to right, 0 at the bottom.
	Points string
	// N is the number of points; Last and Max the newest and largest
	// values, formatted.
	N         int
	Last, Max string
	// Span is how far back the chart goes ("12 min").
	Span string
}

// The charts' viewBox.
const (
	chartW = 600
	chartH = 120
)

// point is one value of a series at a time.
type point struct {
	at time.Time
	v  float64
}

// charts turns topic's samples into its charts of lag (records and
// seconds), rows/s (between consecutive samples) and commit latency (the
// latest commit's duration at each sample), up to now.
func charts(now time.Time, s []statusSample) []chart {
	var lagRec, lagSec, rate, commit []point
	for i, x := range s {
		if x.lagRecords >= 0 {
			lagRec = append(lagRec, point{x.at, float64(x.lagRecords)})
		}
		if x.lagSeconds >= 0 {
			lagSec = append(lagSec, point{x.at, x.lagSeconds})
		}
		if x.commitSecs >= 0 {
			commit = append(commit, point{x.at, x.commitSecs})
		}
		if i > 0 {
			// Counters that went back mean Tarn restarted (they count
			// since start): no rate across that.
			if dt := x.at.Sub(s[i-1].at).Seconds(); dt > 0 && x.rows >= s[i-1].rows {
				rate = append(rate, point{x.at, float64(x.rows-s[i-1].rows) / dt})
			}
		}
	}
	from := now.Add(-historyWindow)
	if len(s) > 0 && s[0].at.After(from) {
		from = s[0].at
	}
	whole := func(v float64) string { return count(int64(v)) }
	return []chart{
		draw("chart-lag-records", "Lag (records)", lagRec, from, now, whole),
		draw("chart-lag-seconds", "Lag (seconds)", lagSec, from, now, seconds),
		draw("chart-rows-per-second", "Rows/s", rate, from, now, func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }),
		draw("chart-commit-seconds", "Commit latency", commit, from, now, seconds),
	}
}

// draw scales ps into the viewBox: time from..to across, 0..max up.
func draw(id, title string, ps []point, from, to time.Time, format func(float64) string) chart {
	c := chart{ID: id, Title: title, N: len(ps), Span: span(to.Sub(from))}
	if len(ps) == 0 {
		return c
	}
	top := 0.0
	for _, p := range ps {
		top = max(top, p.v)
	}
	c.Last, c.Max = format(ps[len(ps)-1].v), format(top)
	span := to.Sub(from).Seconds()
	var b strings.Builder
	for i, p := range ps {
		x := float64(chartW)
		if span > 0 {
			x = p.at.Sub(from).Seconds() / span * chartW
		}
		y := float64(chartH)
		if top > 0 {
			// A margin of 4 keeps the line's stroke inside the box.
			y = chartH - 4 - p.v/top*(chartH-8)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x, y)
	}
	c.Points = b.String()
	return c
}

// span is how far back a chart goes, to the minute ("1 h", "12 min",
// "40 s").
func span(d time.Duration) string {
	switch {
	case d >= time.Hour-30*time.Second:
		return "1 h"
	case d >= time.Minute:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	}
	return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
}
