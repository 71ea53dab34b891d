package web

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/lien"
)

// TestUsageCharts: one chart, its bars stacked by key; a bar's height is
// its amount's share of the scale's round top, computed in decimals; a
// period without charges has no bar; every drawing labels the current
// period and at most as many as fit.
func TestUsageCharts(t *testing.T) {
	now := time.Date(2026, 11, 20, 15, 0, 0, 0, time.Local)
	starts, err := periodStarts(now, "day", time.Time{}, time.Time{})
	if err != nil || len(starts) != 31 || !starts[30].Equal(time.Date(2026, 11, 20, 0, 0, 0, 0, time.Local)) || !starts[0].Equal(time.Date(2026, 10, 21, 0, 0, 0, 0, time.Local)) {
		t.Fatalf("the days of the chart: %v … %v (%v)", starts[0], starts[len(starts)-1], err)
	}
	row := func(day int, user, net string) lien.UsageRow {
		return lien.UsageRow{Period: starts[day], User: user, Net: decimal.RequireFromString(net)}
	}
	rows := []lien.UsageRow{row(0, "amy", "0.1"), row(0, "bob", "0.9"), row(30, "amy", "0.2"), row(30, "amy", "0.1")}
	charts := usageCharts(rows, "user", "day", starts, 2)
	if len(charts) != 1 || len(charts[0].Series) != 2 || charts[0].Series[0].Name != "amy" || charts[0].Series[1].Name != "bob" {
		t.Fatalf("charts %+v", charts)
	}
	d := charts[0].Drawings[0]
	if d.Class != "wide" || len(d.Columns) != 31 {
		t.Fatalf("the wide drawing: %s, %d columns", d.Class, len(d.Columns))
	}
	var ticks []string
	for _, y := range d.YTicks {
		ticks = append(ticks, y.Text)
	}
	if !slices.Equal(ticks, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}) {
		t.Errorf("y ticks %v", ticks)
	}
	// 240 high: amy's 0.1 of 1.0 is 24 from the bottom (268), bob's 0.9 on it.
	if got := d.Columns[0].Bars; len(got) != 2 || got[0] != (bar{Class: "s0", Y: "244.00", Height: "24.00"}) || got[1] != (bar{Class: "s1", Y: "28.00", Height: "216.00"}) {
		t.Errorf("the first day's bars %+v", got)
	}
	if got := d.Columns[30].Bars; len(got) != 1 || got[0].Height != "72.00" {
		t.Errorf("the last day's bars %+v", got)
	}
	if len(d.Columns[15].Bars) != 0 || !strings.Contains(d.Columns[0].Title, "1.00 credits; amy 0.10; bob 0.90") {
		t.Errorf("day 15 %+v, day 0's title %q", d.Columns[15], d.Columns[0].Title)
	}
	for _, d := range charts[0].Drawings {
		if len(d.XTicks) > d.labels || d.XTicks[len(d.XTicks)-1].Text != "20 Nov" {
			t.Errorf("%s: %d labels, the last %q", d.Class, len(d.XTicks), d.XTicks[len(d.XTicks)-1].Text)
		}
		last := d.Columns[30]
		if end := decimal.RequireFromString(last.X).Add(decimal.RequireFromString(last.Width)); end.GreaterThan(decimal.NewFromInt(int64(d.PlotRight))) {
			t.Errorf("%s: the last bar ends at %s, beyond the plot's %d", d.Class, end, d.PlotRight)
		}
	}
	if usageCharts(nil, "user", "day", starts, 2) != nil {
		t.Errorf("charts of no usage")
	}
}

// TestRoundScale: the y-axis has a round step and a top just above the
// tallest bar, labelled short enough for a phone.
func TestRoundScale(t *testing.T) {
	for _, c := range []struct{ top, step, ceiling, label string }{
		{"278208", "100000", "300000", "300k"},
		{"83547714", "20000000", "100000000", "100M"},
		{"1", "0.2", "1", "1"},
		{"7", "2", "8", "8"},
		{"4100", "1000", "5000", "5,000"},
		{"0.03", "0.01", "0.03", "0.03"},
	} {
		step, ceiling := roundScale(decimal.RequireFromString(c.top))
		if step.String() != decimal.RequireFromString(c.step).String() || !ceiling.Equal(decimal.RequireFromString(c.ceiling)) || tickLabel(ceiling, ceiling) != c.label {
			t.Errorf("top %s: step %s ceiling %s (%s), want %s %s (%s)", c.top, step, ceiling, tickLabel(ceiling, ceiling), c.step, c.ceiling, c.label)
		}
	}
}

// TestPeriodStarts: a chosen range's periods, refused beyond maxSlots,
// and the default's fitted to the first period with charges.
func TestPeriodStarts(t *testing.T) {
	now := time.Date(2026, 11, 20, 15, 0, 0, 0, time.Local)
	day := func(m, d int) time.Time { return time.Date(2026, time.Month(m), d, 0, 0, 0, 0, time.Local) }
	starts, err := periodStarts(now, "week", day(11, 1), day(11, 18))
	if err != nil || len(starts) != 4 || !starts[0].Equal(day(10, 26)) || !starts[3].Equal(day(11, 16)) {
		t.Errorf("weeks of 1 to 17 November: %v (%v)", starts, err)
	}
	if _, err := periodStarts(now, "day", day(1, 1).AddDate(-2, 0, 0), day(11, 18)); err == nil {
		t.Errorf("a range of 1000 days is not refused")
	}
	starts, _ = periodStarts(now, "day", time.Time{}, time.Time{})
	if got := fitted(starts, []lien.UsageRow{{Period: day(11, 3)}, {Period: day(11, 2)}}); len(got) != 19 || !got[0].Equal(day(11, 2)) {
		t.Errorf("fitted: %d from %v", len(got), got[0])
	}
}

// TestKeptPeriods: the usage of a bank whose history before a date is in
// an archive is charted from the first period the bank keeps whole, and
// asked from that period's start, or from the date when even the last
// period began before it.
func TestKeptPeriods(t *testing.T) {
	day := func(m, d int) time.Time { return time.Date(2026, time.Month(m), d, 0, 0, 0, 0, time.UTC) }
	months := []time.Time{day(9, 1), day(10, 1), day(11, 1), day(12, 1)}
	for _, c := range []struct {
		archived   time.Time
		wantStarts []time.Time
		wantSince  time.Time
	}{
		{time.Time{}, months, day(9, 1)},
		{day(9, 1), months, day(9, 1)},
		{day(10, 15), months[2:], day(11, 1)},
		{day(12, 5), months[3:], day(12, 5)},
	} {
		starts, since := keptPeriods(months, c.archived)
		if !slices.Equal(starts, c.wantStarts) || !since.Equal(c.wantSince) {
			t.Errorf("archived before %s: %v from %s, want %v from %s", c.archived, starts, since, c.wantStarts, c.wantSince)
		}
	}
}
