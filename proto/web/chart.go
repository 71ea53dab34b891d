package web

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/report"
	"github.com/ingot-hpc/ingot/lien"
)

// Charts are drawn on the server as SVG: a bar per period, one chart per
// project or user (small multiples on one scale, so that their bars
// compare), with the figures also in a table beside them for whoever does
// not see the bars.

// slots is how many periods a chart shows, ending with the current one:
// a month of days, half a year of weeks, a year of months.
var slots = map[string]int{"day": 31, "week": 26, "month": 12}

// The chart's geometry, in the SVG's own units (viewBox; CSS scales it to
// the page's width).
const (
	chartWidth  = 640
	chartHeight = 220
	plotLeft    = 88 // room for the scale's labels
	plotRight   = 632
	plotTop     = 16
	plotBottom  = 192 // below: the periods' labels
)

// chart is one series' bars.
type chart struct {
	ID    string // unique in the page, for aria-labelledby
	Name  string // the project or user
	Label string // what the chart shows, in words
	Max   string // the scale's top, as an amount
	Bars  []bar
	Ticks []tick
}

// bar is one period's bar. Its height is the period's amount on the
// common scale, computed in decimals and written with two decimal places:
// a coordinate, never an amount, so no float is involved.
type bar struct {
	X, Width  int
	Y, Height string
	Period    string
	Amount    string
}

// tick is a label under the bars.
type tick struct {
	X      int
	Anchor string // SVG text-anchor: start, middle or end
	Text   string
}

// The fixed geometry, for the template.
func (chart) Width() int      { return chartWidth }
func (chart) Height() int     { return chartHeight }
func (chart) PlotLeft() int   { return plotLeft }
func (chart) PlotRight() int  { return plotRight }
func (chart) PlotTop() int    { return plotTop }
func (chart) PlotBottom() int { return plotBottom }

// usageCharts draws the net usage of rows (lien.Usage's, grouped by the
// key of by and by period) in the periods that start at starts, one chart
// per key, in key order.
func usageCharts(rows []lien.UsageRow, by string, period string, starts []time.Time, p int32) []chart {
	var keys []string
	net := map[string]map[time.Time]decimal.Decimal{}
	top := decimal.Zero
	for _, r := range rows {
		key := r.Project
		if by == "user" {
			key = r.User
		}
		if net[key] == nil {
			keys = append(keys, key)
			net[key] = map[time.Time]decimal.Decimal{}
		}
		at := r.Period.UTC() // a map key: one instant, whatever its zone
		net[key][at] = net[key][at].Add(r.Net)
		top = decimal.Max(top, net[key][at])
	}
	if top.IsZero() {
		return nil
	}
	slot := (plotRight - plotLeft) / len(starts)
	width := max(1, slot*4/5)
	plotHeight := decimal.NewFromInt(plotBottom - plotTop)
	charts := make([]chart, len(keys))
	for i, key := range keys {
		c := chart{ID: "chart-" + key, Name: key, Max: report.Amount(top, p),
			Label: "Net usage of " + key + " per " + period + ", from " + starts[0].Format(dateLayout) + " to " + starts[len(starts)-1].Format(dateLayout)}
		for j, start := range starts {
			amount := net[key][start.UTC()]
			height := amount.Mul(plotHeight).DivRound(top, 2)
			c.Bars = append(c.Bars, bar{X: plotLeft + j*slot + (slot-width)/2, Width: width,
				Y: decimal.NewFromInt(plotBottom).Sub(height).StringFixed(2), Height: height.StringFixed(2),
				Period: start.Format(dateLayout), Amount: report.Amount(amount, p)})
		}
		label := periodLabel(period)
		last := len(starts) - 1
		c.Ticks = []tick{
			{X: plotLeft, Anchor: "start", Text: starts[0].Format(label)},
			{X: plotLeft + last/2*slot + slot/2, Anchor: "middle", Text: starts[last/2].Format(label)},
			{X: plotLeft + len(starts)*slot, Anchor: "end", Text: starts[last].Format(label)},
		}
		charts[i] = c
	}
	return charts
}

// periodLabel is the layout of a period's label under the bars.
func periodLabel(period string) string {
	if period == "month" {
		return "Jan 2006"
	}
	return "2 Jan"
}

// periodStarts are the starts of the chart's periods: slots of them,
// ending with the one now is in, in the server's zone.
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

func periodStarts(now time.Time, period string) []time.Time {
	n := slots[period]
	last := lien.PeriodStart(now, period, time.Local)
	starts := make([]time.Time, n)
	for i := range starts {
		starts[i] = lien.PeriodAdd(last, period, i-(n-1))
	}
	return starts
}
