package charge

import (
	"testing"
	"time"
)

// The pricing benchmarks price under a compiled table, as the bank does
// (it compiles its table once per record); BenchmarkCompile is that once.

func mustCompile(b *testing.B, t RateTable) *CompiledTable {
	b.Helper()
	c, err := t.Compile()
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func BenchmarkCompile(b *testing.B) {
	table := fullTable()
	for b.Loop() {
		mustCompile(b, table)
	}
}

func BenchmarkPrice(b *testing.B) {
	table := mustCompile(b, fullTable())
	u := gpuJob()
	for b.Loop() {
		if _, err := table.Price(DebitSuccessfulWC, node, u); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPriceWindows prices a week-long job across nights and weekends
// in a zone with daylight saving time.
func BenchmarkPriceWindows(b *testing.B) {
	t := fullTable()
	t.Location = "America/New_York"
	t.TimeOfDay = []TimeWindow{{Name: "night", Start: "20:00", End: "06:00", Multiplier: dec("0.5")}}
	t.DaysOfWeek = []DayWindow{{Name: "weekend", Days: []string{"Saturday", "Sunday"}, Multiplier: dec("0.8")}}
	table := mustCompile(b, t)
	u := gpuJob()
	u.WallclockSeconds, u.WallclockLimitSeconds = 7*24*3600, 7*24*3600
	u.Start = time.Date(2026, 10, 28, 9, 0, 0, 0, time.UTC)
	for b.Loop() {
		if _, err := table.Price(DebitAllPE, node, u); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQuote(b *testing.B) {
	table := mustCompile(b, fullTable())
	req := Request{Resources: gpuJob().Resources, WallclockLimitSeconds: 7200}
	for b.Loop() {
		if _, err := table.Quote(DebitSuccessfulWC, node, req); err != nil {
			b.Fatal(err)
		}
	}
}
