package charge

import (
	"testing"
	"time"
)

func BenchmarkPrice(b *testing.B) {
	table := fullTable()
	u := gpuJob()
	for b.Loop() {
		if _, err := Price(table, DebitSuccessfulWC, node, u); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPriceWindows prices a week-long job across nights and weekends
// in a zone with daylight saving time.
func BenchmarkPriceWindows(b *testing.B) {
	table := fullTable()
	table.Location = "America/New_York"
	table.TimeOfDay = []TimeWindow{{Name: "night", Start: "20:00", End: "06:00", Multiplier: dec("0.5")}}
	table.DaysOfWeek = []DayWindow{{Name: "weekend", Days: []string{"Saturday", "Sunday"}, Multiplier: dec("0.8")}}
	u := gpuJob()
	u.WallclockSeconds, u.WallclockLimitSeconds = 7*24*3600, 7*24*3600
	u.Start = time.Date(2026, 10, 28, 9, 0, 0, 0, time.UTC)
	for b.Loop() {
		if _, err := Price(table, DebitAllPE, node, u); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQuote(b *testing.B) {
	table := fullTable()
	req := Request{Resources: gpuJob().Resources, WallclockLimitSeconds: 7200}
	for b.Loop() {
		if _, err := Quote(table, DebitSuccessfulWC, node, req); err != nil {
			b.Fatal(err)
		}
	}
}
