package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"
)

// chart is one chart of the charts page: series of values over the same
// minutes, drawn as lines in an inline SVG (no script, no build step).
type chart struct {
	Title string
	Note  string // what the chart counts, under its title
	// Log draws the values (milliseconds) on a logarithmic axis.
	Log     bool
	Minutes []time.Time // the start of each point's minute
	Series  []series
}

// series is one line of a chart: a value per minute, NaN where it is not
// known (the minute was not rolled up).
type series struct {
	Name   string
	Color  string // a CSS colour, a constant of this package
	Values []float64
}

// The chart's geometry, in SVG user units.
const (
	chartW, chartH          = 560, 170
	padLeft, padRight       = 56, 10
	padTop, padBottom       = 10, 22
	plotW, plotH            = chartW - padLeft - padRight, chartH - padTop - padBottom
	colorOK, colorBad       = "#067647", "#b42318"
	colorWarn, colorAccent  = "#b54708", "#2e5bd8"
	colorMuted              = "#6b7385"
	chartFont               = `font-family="system-ui, sans-serif" font-size="11"`
	chartGrid, chartGridTxt = "#e3e6ec", "#6b7385"
)

// HTML renders the chart: a legend and the SVG. Every text in it is
// escaped; the colours are this package's constants.
func (c chart) HTML() template.HTML {
	var b strings.Builder
	b.WriteString(`<div class="legend">`)
	for _, s := range c.Series {
		fmt.Fprintf(&b, `<span><i style="background:%s"></i>%s</span>`, s.Color, esc(s.Name))
	}
	b.WriteString(`</div>`)
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s" %s>`, chartW, chartH, esc(c.Title), chartFont)
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.Title))
	lo, hi := c.scale()
	for _, tk := range c.ticks(lo, hi) {
		y := c.y(tk, lo, hi)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s"/>`, padLeft, chartW-padRight, y, y, chartGrid)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="%s">%s</text>`, padLeft-6, y+4, chartGridTxt, esc(c.label(tk)))
	}
	n := len(c.Minutes)
	for _, i := range []int{0, n / 2, n - 1} {
		if i < 0 || i >= n {
			continue
		}
		anchor := map[int]string{0: "start", n - 1: "end"}[i]
		if anchor == "" {
			anchor = "middle"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="%s" fill="%s">%s</text>`, c.x(i), chartH-6, anchor,
			chartGridTxt, c.Minutes[i].UTC().Format("15:04"))
	}
	for _, s := range c.Series {
		c.line(&b, s, lo, hi)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// line draws one series: a polyline through each run of known values,
// and a dot per value whose tooltip (<title>) gives the minute and value.
func (c chart) line(b *strings.Builder, s series, lo, hi float64) {
	var run []string
	flush := func() {
		if len(run) > 1 {
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, s.Color, strings.Join(run, " "))
		}
		run = run[:0]
	}
	for i, v := range s.Values {
		if math.IsNaN(v) || i >= len(c.Minutes) {
			flush()
			continue
		}
		x, y := c.x(i), c.y(v, lo, hi)
		run = append(run, fmt.Sprintf("%.1f,%.1f", x, y))
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s"><title>%s %s: %s</title></circle>`, x, y, s.Color,
			c.Minutes[i].UTC().Format("15:04"), esc(s.Name), esc(c.label(v)))
	}
	flush()
}

// x is the horizontal position of minute i.
func (c chart) x(i int) float64 {
	if len(c.Minutes) < 2 {
		return padLeft
	}
	return padLeft + float64(plotW)*float64(i)/float64(len(c.Minutes)-1)
}

// y is the vertical position of v on the axis from lo to hi.
func (c chart) y(v, lo, hi float64) float64 {
	f := (v - lo) / (hi - lo)
	if c.Log {
		f = (math.Log10(max(v, lo)) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo))
	}
	return padTop + float64(plotH)*(1-min(max(f, 0), 1))
}

// scale is the axis' range: from 0 (1 ms on a log axis) to a round number
// at or above the largest value.
func (c chart) scale() (lo, hi float64) {
	top := 0.0
	for _, s := range c.Series {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				top = max(top, v)
			}
		}
	}
	if c.Log {
		return 1, math.Pow(10, math.Max(1, math.Ceil(math.Log10(max(top, 1)))))
	}
	return 0, niceCeil(max(top, 1))
}

// ticks are the gridlines: each power of ten on a log axis, else the
// bottom, middle and top.
func (c chart) ticks(lo, hi float64) []float64 {
	if !c.Log {
		return []float64{lo, (lo + hi) / 2, hi}
	}
	var out []float64
	for v := lo; v <= hi*1.0001; v *= 10 {
		out = append(out, v)
	}
	return out
}

// label formats a value of the chart: a duration on a log (millisecond)
// axis, else a count.
func (c chart) label(v float64) string {
	if c.Log {
		return formatMS(v)
	}
	switch {
	case v >= 10_000_000:
		return fmt.Sprintf("%.0fM", v/1e6)
	case v >= 10_000:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

// formatMS formats milliseconds as the largest whole unit that fits.
func formatMS(ms float64) string {
	switch {
	case ms >= 3_600_000:
		return fmt.Sprintf("%gh", ms/3_600_000)
	case ms >= 60_000:
		return fmt.Sprintf("%gmin", ms/60_000)
	case ms >= 1000:
		return fmt.Sprintf("%gs", ms/1000)
	default:
		return fmt.Sprintf("%gms", ms)
	}
}

// niceCeil is the smallest of 1, 2 or 5 times a power of ten at or above v.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func esc(s string) string { return template.HTMLEscapeString(s) }
