package warning

import (
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/ledger"
)

func status(id uint64, amount, reserved string, end time.Time, active bool) ledger.AllocationStatus {
	a := ledger.AllocationStatus{Active: active, Reserved: decimal.RequireFromString(reserved)}
	a.ID, a.End, a.Amount, a.CreditLimit = id, end, decimal.RequireFromString(amount), decimal.Zero
	return a
}

func TestOf(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name      string
		available string
		allocs    []ledger.AllocationStatus
		want      []Kind
		contains  string
	}{
		{"healthy", "100", []ledger.AllocationStatus{status(1, "100", "0", now.AddDate(0, 2, 0), true)}, nil, ""},
		{"never ends", "100", []ledger.AllocationStatus{status(1, "100", "0", time.Time{}, true)}, nil, ""},
		{"ends in 20 days", "100", []ledger.AllocationStatus{status(1, "100", "0", now.AddDate(0, 0, 20), true)}, []Kind{Ending}, "ends in 20 days"},
		{"ends in exactly 30 days", "100", []ledger.AllocationStatus{status(1, "100", "0", now.Add(Soon), true)}, []Kind{Ending}, "in 30 days"},
		{"ends in 31 days", "100", []ledger.AllocationStatus{status(1, "100", "0", now.AddDate(0, 0, 31), true)}, nil, ""},
		{"ended (not active)", "0", []ledger.AllocationStatus{status(1, "100", "0", now.AddDate(0, 0, -1), false)}, nil, ""},
		{"node exhausted", "0.00", []ledger.AllocationStatus{status(1, "0.00", "0", time.Time{}, true)}, []Kind{Exhausted}, "exhausted"},
		{"overdrawn", "-5", []ledger.AllocationStatus{status(1, "-5", "0", time.Time{}, true)}, []Kind{Exhausted}, "-5"},
		{"one allocation of two used up", "50", []ledger.AllocationStatus{status(1, "50", "50", time.Time{}, true), status(2, "50", "0", time.Time{}, true)},
			[]Kind{Exhausted}, "allocation 1"},
		{"exhausted and ending", "0", []ledger.AllocationStatus{status(1, "0", "0", now.Add(3*time.Hour), true)}, []Kind{Exhausted, Ending}, "in 3 hours"},
	} {
		nb := ledger.NodeBalance{Node: "chem.lab1", Allocations: c.allocs}
		nb.Available = decimal.RequireFromString(c.available)
		got := Of(nb, now, 2)
		var kinds []Kind
		var text []string
		for _, w := range got {
			kinds = append(kinds, w.Kind)
			text = append(text, w.Message)
		}
		if len(kinds) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, text, c.want)
			continue
		}
		for i := range kinds {
			if kinds[i] != c.want[i] {
				t.Errorf("%s: %v, want %v", c.name, text, c.want)
			}
		}
		if c.contains != "" && !strings.Contains(strings.Join(text, "\n"), c.contains) {
			t.Errorf("%s: %q does not say %q", c.name, text, c.contains)
		}
	}
}

func TestOfForecast(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	end := now.AddDate(0, 0, 60)
	rate := func(days int, runsOut time.Time, before int64) forecast.Rate {
		return forecast.Rate{Days: days, RunsOut: &runsOut, DaysBeforeEnd: &before}
	}
	for _, c := range []struct {
		name  string
		rates []forecast.Rate
		end   *time.Time
		want  string
	}{
		{"lasts", []forecast.Rate{rate(7, end.AddDate(0, 0, 5), -5), rate(30, end.AddDate(0, 0, 10), -10)}, &end, ""},
		{"the week's pace runs out", []forecast.Rate{rate(7, now.AddDate(0, 0, 20), 40), rate(30, end.AddDate(0, 0, 10), -10)}, &end, "last 7 days, chem's credits run out on "},
		{"both: the first", []forecast.Rate{rate(7, now.AddDate(0, 0, 40), 20), rate(30, now.AddDate(0, 0, 30), 30)}, &end, "last 30 days"},
		{"no use", []forecast.Rate{{Days: 7}, {Days: 30}}, &end, ""},
		{"never ends", []forecast.Rate{{Days: 7, RunsOut: &now}}, nil, ""},
	} {
		got := OfForecast(forecast.Forecast{Node: "chem", AllocationsEnd: c.end, Rates: c.rates})
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s: %+v", c.name, got)
		case c.want != "" && (len(got) != 1 || got[0].Kind != Runway || !strings.Contains(got[0].Message, c.want)):
			t.Errorf("%s: %+v, want %q", c.name, got, c.want)
		}
	}
}
