package web

import (
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/lien"
)

// TestUsageCharts: one chart per key on one scale; a bar's height is its
// amount's share of the largest, computed in decimals; a period without
// charges has a bar of height 0.
func TestUsageCharts(t *testing.T) {
	now := time.Date(2026, 11, 20, 15, 0, 0, 0, time.Local)
	starts := periodStarts(now, "day")
	if len(starts) != 31 || !starts[30].Equal(time.Date(2026, 11, 20, 0, 0, 0, 0, time.Local)) || !starts[0].Equal(time.Date(2026, 10, 21, 0, 0, 0, 0, time.Local)) {
		t.Fatalf("the days of the chart: %v … %v", starts[0], starts[len(starts)-1])
	}
	row := func(day int, user, net string) lien.UsageRow {
		return lien.UsageRow{Period: starts[day], User: user, Net: decimal.RequireFromString(net)}
	}
	// 0.1 + 0.2 of the largest (0.3 of 0.9): exact in decimals.
	rows := []lien.UsageRow{row(0, "amy", "0.1"), row(0, "bob", "0.9"), row(30, "amy", "0.2"), row(30, "amy", "0.1")}
	charts := usageCharts(rows, "user", "day", starts, 2)
	if len(charts) != 2 || charts[0].Name != "amy" || charts[1].Name != "bob" || charts[0].Max != "0.90" || charts[1].Max != "0.90" {
		t.Fatalf("charts %+v", charts)
	}
	plot := plotBottom - plotTop // 176
	for _, tc := range []struct {
		chart, bar     int
		height, amount string
	}{
		{0, 0, "19.56", "0.10"}, // 176 × 0.1 / 0.9 = 19.555…
		{0, 30, "58.67", "0.30"},
		{0, 15, "0.00", "0.00"},
		{1, 0, "176.00", "0.90"},
	} {
		b := charts[tc.chart].Bars[tc.bar]
		if b.Height != tc.height || b.Amount != tc.amount {
			t.Errorf("chart %d bar %d: height %s amount %s, want %s and %s", tc.chart, tc.bar, b.Height, b.Amount, tc.height, tc.amount)
		}
		y := decimal.NewFromInt(plotBottom).Sub(decimal.RequireFromString(b.Height))
		if b.Y != y.StringFixed(2) {
			t.Errorf("chart %d bar %d: y %s, want %s", tc.chart, tc.bar, b.Y, y.StringFixed(2))
		}
	}
	if charts[1].Bars[0].Height != decimal.NewFromInt(int64(plot)).StringFixed(2) {
		t.Errorf("the largest bar is not the plot's height")
	}
	if last := charts[0].Bars[30]; last.X+last.Width > plotRight {
		t.Errorf("the last bar ends at %d, beyond the plot's %d", last.X+last.Width, plotRight)
	}
	if usageCharts(nil, "user", "day", starts, 2) != nil {
		t.Errorf("charts of no usage")
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
