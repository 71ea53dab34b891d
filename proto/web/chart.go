package web

import (
	"slices"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/report"
	"github.com/ingot-hpc/ingot/lien"
)

// Charts are drawn on the server as SVG: one bar per period, stacked by
// project, user or machine, so that a bar's height is the period's total;
// a y-axis of round ticks with gridlines, every period labelled or every
// n-th where they would crowd, and the figures in a table beside it for
// whoever does not see the bars. Each chart is drawn twice, for a wide
// screen and for a phone's (the style sheet shows one): scaling one
// drawing down to 390 pixels would shrink its labels out of reading.

// slots is how many periods a chart shows by default, ending with the
// current one: a month of days, half a year of weeks, a year of months.
var slots = map[string]int{"day": 31, "week": 26, "month": 12}

// maxSlots bounds the periods of a chosen date range: a longer range is
// refused with a pointer to a longer period.
const maxSlots = 400

// maxSeries is how many series a chart draws apart: the largest, then
// the others together (the table has each).
const maxSeries = 8

// layout is the geometry of one drawing of a chart, in the SVG's own
// units (its viewBox; CSS scales it to the page's width).
type layout struct {
	Class                                    string // "wide" or "narrow", which the style sheet shows by the screen's width
	Width, Height                            int
	PlotLeft, PlotRight, PlotTop, PlotBottom int
	// labels is how many period labels fit under the plot.
	labels int
}

var (
	wide   = layout{Class: "wide", Width: 1000, Height: 316, PlotLeft: 76, PlotRight: 988, PlotTop: 28, PlotBottom: 268, labels: 16}
	narrow = layout{Class: "narrow", Width: 360, Height: 276, PlotLeft: 52, PlotRight: 352, PlotTop: 28, PlotBottom: 228, labels: 5}
)

// chart is the usage of a node's page: its series and periods, drawn at
// both layouts.
type chart struct {
	Label    string // what the chart shows, in words
	Series   []series
	Drawings []drawing
}

// series is one project's, user's or machine's usage (or the others').
type series struct {
	Name  string
	Class string // its colour: s0 … s7
	total decimal.Decimal
	net   map[time.Time]decimal.Decimal
}

// drawing is a chart at one layout.
type drawing struct {
	layout
	YTicks  []yTick
	XTicks  []xTick
	Columns []column
	XTitle  string
}

// yTick is a round value on the y-axis, with its gridline.
type yTick struct {
	Y    string
	Text string
}

// xTick is a period's label under the bars.
type xTick struct {
	X    string
	Text string
}

// column is one period: its stacked bars and what it totals.
type column struct {
	Title string // the period and its figures, shown on hover
	X     string
	Width string
	Bars  []bar
}

// bar is one series' part of a period's column. Coordinates are computed
// in decimals and written with two decimal places: coordinates, never
// amounts, so no float is involved.
type bar struct {
	Class     string
	Y, Height string
}

// usageCharts draws the net usage of rows (lien.Usage's, grouped by the
// key of by and by period) in the periods that start at starts, stacked
// by key, or returns nil when there is none to draw.
func usageCharts(rows []lien.UsageRow, by string, period string, starts []time.Time, p int32) []chart {
	byKey := map[string]*series{}
	var all []*series
	totals := map[time.Time]decimal.Decimal{}
	for _, r := range rows {
		key := usageKey(r, by)
		s := byKey[key]
		if s == nil {
			s = &series{Name: key, net: map[time.Time]decimal.Decimal{}}
			byKey[key] = s
			all = append(all, s)
		}
		at := r.Period.UTC() // a map key: one instant, whatever its zone
		s.net[at] = s.net[at].Add(r.Net)
		s.total = s.total.Add(r.Net)
	}
	top := decimal.Zero
	for _, s := range all {
		for at, v := range s.net {
			if v.IsPositive() {
				totals[at] = totals[at].Add(v)
			}
		}
	}
	for _, v := range totals {
		top = decimal.Max(top, v)
	}
	if top.IsZero() {
		return nil
	}
	kept := keepSeries(all)
	c := chart{Label: "Net usage in credits per " + period + " by " + by + ", stacked, from " + starts[0].Format(dateLayout) + " to " + starts[len(starts)-1].Format(dateLayout)}
	for i, s := range kept {
		s.Class = "s" + strconv.Itoa(i)
		c.Series = append(c.Series, *s)
	}
	step, ceiling := roundScale(top)
	for _, l := range []layout{wide, narrow} {
		c.Drawings = append(c.Drawings, draw(l, c.Series, starts, period, step, ceiling, totals, p))
	}
	return []chart{c}
}

// usageKey is the key of by in a usage row.
func usageKey(r lien.UsageRow, by string) string {
	switch by {
	case "user":
		return r.User
	case "machine":
		return r.Machine
	}
	return r.Project
}

// keepSeries keeps the largest maxSeries-1 series by total and lumps the
// rest into one "others", if there are more than maxSeries; the series
// keep their name order.
func keepSeries(all []*series) []*series {
	if len(all) <= maxSeries {
		return all
	}
	bySize := slices.Clone(all)
	slices.SortStableFunc(bySize, func(a, b *series) int { return b.total.Cmp(a.total) })
	others := &series{Name: "the others", net: map[time.Time]decimal.Decimal{}}
	for _, s := range bySize[maxSeries-1:] {
		for at, v := range s.net {
			others.net[at] = others.net[at].Add(v)
		}
	}
	kept := slices.DeleteFunc(slices.Clone(all), func(s *series) bool { return !slices.Contains(bySize[:maxSeries-1], s) })
	return append(kept, others)
}

// draw lays the chart out at l: columns of stacked bars on the scale
// 0…ceiling with a tick each step, and a label under every n-th period
// so that at most l.labels show, the current period always.
func draw(l layout, ss []series, starts []time.Time, period string, step, ceiling decimal.Decimal, totals map[time.Time]decimal.Decimal, p int32) drawing {
	d := drawing{layout: l, XTitle: map[string]string{"day": "day", "week": "week starting", "month": "month"}[period]}
	bottom := decimal.NewFromInt(int64(l.PlotBottom))
	plotHeight := decimal.NewFromInt(int64(l.PlotBottom - l.PlotTop))
	y := func(v decimal.Decimal) decimal.Decimal { return bottom.Sub(v.Mul(plotHeight).DivRound(ceiling, 2)) }
	for v := decimal.Zero; v.LessThanOrEqual(ceiling); v = v.Add(step) {
		d.YTicks = append(d.YTicks, yTick{Y: y(v).StringFixed(2), Text: tickLabel(v, ceiling)})
	}
	slot := decimal.NewFromInt(int64(l.PlotRight - l.PlotLeft)).Div(decimal.NewFromInt(int64(len(starts))))
	width := slot.Mul(decimal.RequireFromString("0.8")).Round(2)
	every := (len(starts) + l.labels - 1) / l.labels
	label := periodLabel(period)
	for j, start := range starts {
		at := start.UTC()
		left := decimal.NewFromInt(int64(l.PlotLeft)).Add(slot.Mul(decimal.NewFromInt(int64(j))))
		col := column{X: left.Add(slot.Sub(width).Div(decimal.NewFromInt(2))).StringFixed(2), Width: width.StringFixed(2),
			Title: start.Format(label) + ": " + report.Grouped(totals[at], p) + " credits"}
		base := decimal.Zero
		for _, s := range ss {
			v := s.net[at]
			if !v.IsPositive() {
				continue
			}
			col.Title += "; " + s.Name + " " + report.Grouped(v, p)
			lo, hi := y(base), y(base.Add(v))
			col.Bars = append(col.Bars, bar{Class: s.Class, Y: hi.StringFixed(2), Height: lo.Sub(hi).StringFixed(2)})
			base = base.Add(v)
		}
		d.Columns = append(d.Columns, col)
		if (len(starts)-1-j)%every == 0 {
			d.XTicks = append(d.XTicks, xTick{X: left.Add(slot.Div(decimal.NewFromInt(2))).StringFixed(2), Text: start.Format(label)})
		}
	}
	return d
}

// roundScale is the y-axis of a chart whose tallest bar is top: a round
// step (1, 2 or 5 times a power of ten) that gives at most five ticks
// above 0, and the first multiple of it at or above top.
func roundScale(top decimal.Decimal) (step, ceiling decimal.Decimal) {
	raw := top.Div(decimal.NewFromInt(5))
	mag := decimal.New(1, int32(len(raw.Truncate(0).String()))-1)
	if raw.LessThan(decimal.NewFromInt(1)) {
		mag = decimal.New(1, 0)
		for mag.GreaterThan(raw) {
			mag = mag.Div(decimal.NewFromInt(10))
		}
	}
	for _, m := range []int64{1, 2, 5, 10} {
		if step = mag.Mul(decimal.NewFromInt(m)); step.GreaterThanOrEqual(raw) {
			break
		}
	}
	ceiling = top.Div(step).Ceil().Mul(step)
	return step, ceiling
}

// tickLabel writes a round value of a y-axis whose top is ceiling short,
// in the unit the top reads best in: "20M", "250k", "1,200", "0.5". A
// long label would not fit left of the plot on a phone.
func tickLabel(v, ceiling decimal.Decimal) string {
	switch {
	case v.IsZero():
		return "0"
	case ceiling.GreaterThanOrEqual(decimal.NewFromInt(1_000_000)):
		return v.Div(decimal.NewFromInt(1_000_000)).String() + "M"
	case ceiling.GreaterThanOrEqual(decimal.NewFromInt(10_000)):
		return v.Div(decimal.NewFromInt(1_000)).String() + "k"
	case v.IsInteger():
		return report.Grouped(v, 0)
	}
	return v.String()
}

// periodLabel is the layout of a period's label under the bars.
func periodLabel(period string) string {
	if period == "month" {
		return "Jan 2006"
	}
	return "2 Jan"
}

// keptPeriods are the periods of starts that the bank keeps whole, those
// that begin at or after archivedBefore (the last one at least), and the
// time its usage is asked from: the first's start, or archivedBefore
// within it. The server reads no archive.
func keptPeriods(starts []time.Time, archivedBefore time.Time) ([]time.Time, time.Time) {
	for len(starts) > 1 && starts[0].Before(archivedBefore) {
		starts = starts[1:]
	}
	since := starts[0]
	if since.Before(archivedBefore) {
		since = archivedBefore
	}
	return starts, since
}

// periodStarts are the starts of the chart's periods, in the server's
// zone: those from the one from is in to the one before to is in, when
// they are given; else slots of them ending with the one now is in (or
// with to's). More than maxSlots is refused.
func periodStarts(now time.Time, period string, from, to time.Time) ([]time.Time, error) {
	last := lien.PeriodStart(now, period, time.Local)
	if !to.IsZero() {
		last = lien.PeriodStart(to.Add(-time.Nanosecond), period, time.Local)
	}
	first := lien.PeriodAdd(last, period, -(slots[period] - 1))
	if !from.IsZero() {
		first = lien.PeriodStart(from, period, time.Local)
	}
	var starts []time.Time
	for at := first; !at.After(last); at = lien.PeriodAdd(at, period, 1) {
		if len(starts) == maxSlots {
			return nil, errRange(period)
		}
		starts = append(starts, at)
	}
	if len(starts) == 0 {
		starts = append(starts, last)
	}
	return starts, nil
}

// fitted drops the periods before the first with charges (rows are in
// period order), so that a young bank's chart is not mostly empty.
func fitted(starts []time.Time, rows []lien.UsageRow) []time.Time {
	if len(rows) == 0 {
		return starts
	}
	first := rows[0].Period
	for _, r := range rows {
		if r.Period.Before(first) {
			first = r.Period
		}
	}
	for len(starts) > 1 && starts[1].Compare(first) <= 0 {
		starts = starts[1:]
	}
	return starts
}

// PlotHeight is the plot's height, for the template.
func (l layout) PlotHeight() int { return l.PlotBottom - l.PlotTop }
