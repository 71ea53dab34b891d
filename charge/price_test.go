package charge

import (
	"errors"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// fullTable uses every rate type (docs/charge-policies.md, "The formula").
func fullTable() RateTable {
	return RateTable{
		Precision: 2,
		Rates: []ChargeRate{
			{Type: VBR, Name: "Processors", Rate: dec("1")},
			{Type: VBR, Name: "Memory", Rate: dec("0.0001")},
			{Type: VBR, Name: "GPUs", Rate: dec("10")},
			{Type: NBR, Name: "License", Instance: "matlab", Rate: dec("0.5")},
			{Type: VBU, Name: "CPUTime", Rate: dec("0.01")},
			{Type: NBU, Name: "License", Instance: "*", Rate: dec("3")},
			{Type: VBM, Name: "Nodes", Rate: dec("1")},
			{Type: NBM, Name: "QualityOfService", Instance: "premium", Rate: dec("2")},
			{Type: NBM, Name: "QualityOfService", Instance: "*", Rate: dec("1")},
			{Type: NBM, Name: "Partition", Instance: "gpu", Rate: dec("1.5")},
			{Type: NBM, Name: "Partition", Instance: "*", Rate: dec("1")},
			{Type: VBF, Name: "Nodes", Rate: dec("10")},
			{Type: NBF, Name: "Partition", Instance: "gpu", Rate: dec("100")},
		},
	}
}

// gpuJob: 8 processors, 1 node, 2 GPUs, 16000 MB, 1 h, 4 CPU-hours, two
// matlab licenses and one abaqus, premium QOS, gpu partition.
func gpuJob() Usage {
	return Usage{
		Resources: Resources{
			Processors: 8, Nodes: 1, GPUs: 2, MemoryMB: 16000,
			QOS: "premium", Partition: "gpu", Licenses: map[string]int64{"matlab": 2, "abaqus": 1},
		},
		WallclockSeconds: 3600, WallclockLimitSeconds: 7200, CPUSeconds: 14400, State: Completed,
	}
}

// TestFormula checks Gold's formula term by term:
//
//	VBR+NBR: 8×1×3600 + 16000×0.0001×3600 + 2×10×3600 + 2×0.5×3600
//	       = 28800 + 5760 + 72000 + 3600 = 110160
//	VBU+NBU: 14400×0.01 + 1×3 (abaqus) + 2×3 (matlab) = 144 + 3 + 6 = 153
//	         (no NBU rate lists either license, so NBU License=* takes both)
//	VBM×NBM: (1×1) × 2 × 1.5 = 3
//	VBF+NBF: 1×10 + 100 = 110
//	charge = (110160 + 153) × 3 + 110 = 331049
func TestFormula(t *testing.T) {
	a, err := Price(fullTable(), DebitSuccessfulWC, Shape{}, gpuJob())
	if err != nil {
		t.Fatal(err)
	}
	e := a.Explanation
	for _, c := range []struct {
		name      string
		got, want decimal.Decimal
	}{
		{"time-scaled", e.TimeScaled, dec("110160")},
		{"usage", e.Usage, dec("153")},
		{"multiplier", e.Multiplier, dec("3")},
		{"fees", e.Fees, dec("110")},
		{"exact", e.Exact, dec("331049")},
		{"credits", a.Credits, dec("331049")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !c.got.Equal(c.want) {
				t.Errorf("%s = %s, want %s\n%s", c.name, c.got, c.want, a)
			}
		})
	}
	t.Run("items", func(t *testing.T) {
		want := []string{
			"VBR Processors: 8 × 1 × 3600 s × 1 = 28800",
			"VBR Memory: 16000 × 0.0001 × 3600 s × 1 = 5760",
			"VBR GPUs: 2 × 10 × 3600 s × 1 = 72000",
			"NBR License=matlab: 2 × 0.5 × 3600 s × 1 = 3600",
			"VBU CPUTime: 14400 × 0.01 = 144",
			"NBU License=abaqus (*): 1 × 3 = 3",
			"NBU License=matlab (*): 2 × 3 = 6",
			"VBM Nodes: 1 × 1 = 1",
			"NBM QualityOfService=premium: 1 × 2 = 2",
			"NBM Partition=gpu: 1 × 1.5 = 1.5",
			"VBF Nodes: 1 × 10 = 10",
			"NBF Partition=gpu: 1 × 100 = 100",
		}
		if len(e.Items) != len(want) {
			t.Fatalf("%d items, want %d:\n%s", len(e.Items), len(want), a)
		}
		for i, item := range e.Items {
			if item.String() != want[i] {
				t.Errorf("item %d = %q, want %q", i, item, want[i])
			}
		}
	})
}

// TestItemsAddUp checks the explanation's own arithmetic: every subtotal
// is the product of its factors, and the totals are the sums and product
// of the subtotals.
func TestItemsAddUp(t *testing.T) {
	table := fullTable()
	table.TimeOfDay = []TimeWindow{{Name: "night", Start: "20:00", End: "06:00", Multiplier: dec("0.5")}}
	table.DaysOfWeek = []DayWindow{{Name: "weekend", Days: []string{"Saturday", "Sunday"}, Multiplier: dec("0.8")}}
	u := gpuJob()
	u.Start = time.Date(2026, 11, 20, 23, 30, 0, 0, time.UTC) // Friday night into Saturday
	for _, policy := range []Policy{DebitAllWC, DebitAllCPU, DebitAllPE, DebitAllBlocked, DebitRequestedWC} {
		t.Run(policy.String(), func(t *testing.T) {
			a, err := Price(table, policy, node, u)
			if err != nil {
				t.Fatal(err)
			}
			e := a.Explanation
			sums := map[term]decimal.Decimal{timeScaledTerm: decimal.Zero, usageTerm: decimal.Zero, multiplierTerm: decimal.NewFromInt(1), feeTerm: decimal.Zero}
			for _, item := range e.Items {
				want := item.Quantity.Mul(item.Rate)
				tm := rateTypes[item.Type].term
				if tm == timeScaledTerm {
					want = want.Mul(decimal.NewFromInt(item.Seconds)).Mul(item.Multiplier)
				}
				if !want.Equal(item.Subtotal) {
					t.Errorf("%s: factors give %s", item, want)
				}
				if tm == multiplierTerm {
					sums[tm] = sums[tm].Mul(item.Subtotal)
				} else {
					sums[tm] = sums[tm].Add(item.Subtotal)
				}
			}
			for tm, total := range map[term]decimal.Decimal{timeScaledTerm: e.TimeScaled, usageTerm: e.Usage, multiplierTerm: e.Multiplier, feeTerm: e.Fees} {
				if !sums[tm].Equal(total) {
					t.Errorf("term %d: items give %s, explanation says %s", tm, sums[tm], total)
				}
			}
			exact := e.TimeScaled.Add(e.Usage).Mul(e.Multiplier).Add(e.Fees)
			if !exact.Equal(e.Exact) || !exact.RoundBank(e.Precision).Equal(a.Credits) {
				t.Errorf("formula gives %s, explanation says %s → %s", exact, e.Exact, a.Credits)
			}
		})
	}
}

// TestExactQuotients: a processor equivalent of 64/3 is carried exactly,
// so 1 processor with a third of a 192000 MB node for an hour costs
// 64/3 × 3600 = 76800, not 76799.99.
func TestExactQuotients(t *testing.T) {
	u := Usage{Resources: Resources{Processors: 1, MemoryMB: 64000}, WallclockSeconds: 3600, State: Completed}
	a, err := Price(DefaultRateTable(), DebitAllPE, Shape{Cores: 64, MemoryMB: 192000}, u)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Credits.Equal(dec("76800")) {
		t.Errorf("credits = %s, want 76800\n%s", a.Credits, a)
	}
	if got := a.Explanation.Items[0].Quantity.String(); got != "21.333333333333333333" {
		t.Errorf("PE shown as %s", got)
	}
	// A third of the CPU time: 3 processors, 1000 s, 1000 CPU seconds.
	u = Usage{Resources: Resources{Processors: 3}, WallclockSeconds: 1000, CPUSeconds: 1000, State: Completed}
	if a, err = Price(DefaultRateTable(), DebitAllCPU, Shape{}, u); err != nil || !a.Credits.Equal(dec("1000")) {
		t.Errorf("CPU: %s, %v, want 1000", a.Credits, err)
	}
}

// TestRounding: amounts are rounded half-even at the table's precision.
// 1 processor at 0.001 per second: 5 s = 0.005 → 0.00, 15 s = 0.015 →
// 0.02, 25 s = 0.025 → 0.02, 35 s = 0.035 → 0.04, 36 s = 0.036 → 0.04.
func TestRounding(t *testing.T) {
	cases := []struct {
		precision int32
		rate      string
		seconds   int64
		want      string
	}{
		{2, "0.001", 5, "0"},
		{2, "0.001", 15, "0.02"},
		{2, "0.001", 25, "0.02"},
		{2, "0.001", 35, "0.04"},
		{2, "0.001", 36, "0.04"},
		{2, "0.001", 34, "0.03"},
		{0, "0.5", 5, "2"}, // 2.5 → 2
		{0, "0.5", 7, "4"}, // 3.5 → 4
		{4, "0.00001", 5, "0"},
		{4, "0.00001", 15, "0.0002"},
	}
	for _, c := range cases {
		t.Run(c.rate+"×"+decimal.NewFromInt(c.seconds).String()+"s", func(t *testing.T) {
			table := RateTable{Precision: c.precision, Rates: []ChargeRate{{Type: VBR, Name: "Processors", Rate: dec(c.rate)}}}
			u := Usage{Resources: Resources{Processors: 1}, WallclockSeconds: c.seconds, State: Completed}
			a, err := Price(table, DebitAllWC, Shape{}, u)
			if err != nil {
				t.Fatal(err)
			}
			if !a.Credits.Equal(dec(c.want)) || a.Credits.Exponent() != -c.precision {
				t.Errorf("credits = %s (exponent %d), want %s at %d places", a.Credits, a.Credits.Exponent(), c.want, c.precision)
			}
		})
	}
}

// TestRoundHalfEvenMatchesRoundBank: on decimals, the exact rounding is
// decimal's RoundBank.
func TestRoundHalfEvenMatchesRoundBank(t *testing.T) {
	for _, s := range []string{"0.125", "0.135", "-0.125", "-0.135", "2.5", "3.5", "-2.5", "1.005", "1.0049999", "7", "0", "123456.785"} {
		for places := int32(0); places <= 3; places++ {
			d := dec(s)
			if got, want := roundHalfEven(d.Rat(), places), d.RoundBank(places); !got.Equal(want) {
				t.Errorf("%s at %d places: %s, RoundBank %s", s, places, got, want)
			}
		}
	}
	// A third is never a tie: 1/3 → 0.33, 2/3 → 0.67.
	if got := roundHalfEven(big.NewRat(2, 3), 2); !got.Equal(dec("0.67")) {
		t.Errorf("2/3 → %s", got)
	}
}

// TestUnlistedValues: a table that prices some values of a property
// refuses a job with another value, unless it has a "*" rate for it. The
// explanation names the QOS item as the job spells its QOS, marked when
// the "*" rate priced it.
func TestUnlistedValues(t *testing.T) {
	strict := DefaultRateTable()
	strict.Rates = append(strict.Rates, ChargeRate{Type: NBM, Name: "QualityOfService", Instance: "premium", Rate: dec("2")})
	open := strict.clone()
	open.Rates = append(open.Rates, ChargeRate{Type: NBM, Name: "QualityOfService", Instance: "*", Rate: dec("1")})
	cases := []struct {
		name  string
		table RateTable
		qos   string
		want  string
		item  string // the QOS item's name, if any
		err   error
	}{
		{"listed", strict, "premium", "7200", "QualityOfService=premium", nil},
		{"listed, other case", strict, "Premium", "7200", "QualityOfService=Premium", nil},
		{"no QOS", strict, "", "3600", "", nil},
		{"unlisted", strict, "normal", "", "", ErrUnknownInstance},
		{"unlisted with wildcard", open, "normal", "3600", "QualityOfService=normal (*)", nil},
		{"unlisted with wildcard, other case", open, "Normal", "3600", "QualityOfService=Normal (*)", nil},
		{"listed with wildcard", open, "premium", "7200", "QualityOfService=premium", nil},
		{"listed with wildcard, other case", open, "PREMIUM", "7200", "QualityOfService=PREMIUM", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := Usage{Resources: Resources{Processors: 1, QOS: c.qos}, WallclockSeconds: 3600, State: Completed}
			a, err := Price(c.table, DebitAllWC, Shape{}, u)
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if err != nil {
				return
			}
			if !a.Credits.Equal(dec(c.want)) {
				t.Errorf("credits = %s, want %s", a.Credits, c.want)
			}
			var items []string
			for _, item := range a.Explanation.Items {
				if item.Type == NBM {
					items = append(items, item.What)
				}
			}
			var want []string
			if c.item != "" {
				want = []string{c.item}
			}
			if !slices.Equal(items, want) {
				t.Errorf("QOS items %q, want %q", items, want)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	start := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	ok := Usage{Resources: Resources{Processors: 1}, WallclockSeconds: 60, State: Completed}
	with := func(change func(*Usage)) Usage {
		u := ok
		change(&u)
		return u
	}
	cases := []struct {
		name string
		u    Usage
		want error
	}{
		{"negative processors", with(func(u *Usage) { u.Processors = -1 }), ErrNegative},
		{"negative memory", with(func(u *Usage) { u.MemoryMB = -5 }), ErrNegative},
		{"absurd processors", with(func(u *Usage) { u.Processors = MaxCount + 1 }), ErrAbsurd},
		{"absurd disk", with(func(u *Usage) { u.DiskMB = MaxMB + 1 }), ErrAbsurd},
		{"negative wallclock", with(func(u *Usage) { u.WallclockSeconds = -1 }), ErrNegative},
		{"wallclock over ten years", with(func(u *Usage) { u.WallclockSeconds = MaxSeconds + 1 }), ErrAbsurd},
		{"negative CPU seconds", with(func(u *Usage) { u.CPUSeconds = -1 }), ErrNegative},
		{"negative license", with(func(u *Usage) { u.Licenses = map[string]int64{"matlab": -1} }), ErrNegative},
		{"nameless license", with(func(u *Usage) { u.Licenses = map[string]int64{"": 1} }), ErrBadLicense},
		{"no exit state", with(func(u *Usage) { u.State = 0 }), ErrUnknownExitState},
		{"end before start", with(func(u *Usage) { u.Start, u.End = start, start.Add(-time.Second) }), ErrEndBeforeStart},
		{"wallclock beyond interval", with(func(u *Usage) { u.Start, u.End = start, start.Add(59*time.Second) }), ErrWallclockBeyondInterval},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Price(DefaultRateTable(), DebitAllWC, Shape{}, c.u); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
	t.Run("suspended job", func(t *testing.T) {
		u := with(func(u *Usage) { u.Start, u.End = start, start.Add(time.Hour) }) // 60 s run in an hour
		if _, err := Price(DefaultRateTable(), DebitAllWC, Shape{}, u); err != nil {
			t.Error(err)
		}
	})
	t.Run("bad shape", func(t *testing.T) {
		if _, err := Price(DefaultRateTable(), DebitAllWC, Shape{Cores: -1}, ok); !errors.Is(err, ErrNegative) {
			t.Errorf("err = %v", err)
		}
	})
}
