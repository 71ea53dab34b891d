package charge_test

import (
	"fmt"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/shopspring/decimal"
)

// A premium job on the GPU partition that runs from Friday 18:00 into a
// weekend night, under a table with night and weekend discounts.
func ExamplePrice() {
	table := charge.DefaultRateTable()
	table.Location = "Europe/Paris"
	table.Rates = append(table.Rates,
		charge.ChargeRate{Type: charge.VBR, Name: "GPUs", Rate: decimal.RequireFromString("10")},
		charge.ChargeRate{Type: charge.NBM, Name: "QualityOfService", Instance: "premium", Rate: decimal.RequireFromString("2")},
		charge.ChargeRate{Type: charge.NBM, Name: "QualityOfService", Instance: charge.Wildcard, Rate: decimal.RequireFromString("1")},
		charge.ChargeRate{Type: charge.NBF, Name: "Partition", Instance: "gpu", Rate: decimal.RequireFromString("50")},
		charge.ChargeRate{Type: charge.NBF, Name: "Partition", Instance: charge.Wildcard, Rate: decimal.RequireFromString("0")},
	)
	table.TimeOfDay = []charge.TimeWindow{{Name: "night", Start: "20:00", End: "06:00", Multiplier: decimal.RequireFromString("0.5")}}
	table.DaysOfWeek = []charge.DayWindow{{Name: "weekend", Days: []string{"Saturday", "Sunday"}, Multiplier: decimal.RequireFromString("0.8")}}

	paris, _ := time.LoadLocation("Europe/Paris")
	start := time.Date(2026, 11, 20, 18, 0, 0, 0, paris)
	u := charge.Usage{
		Resources:        charge.Resources{Processors: 4, Nodes: 1, GPUs: 1, QOS: "premium", Partition: "gpu"},
		WallclockSeconds: 8 * 3600, WallclockLimitSeconds: 12 * 3600,
		Start: start, End: start.Add(8 * time.Hour), State: charge.Completed,
	}
	amount, err := charge.Price(table, charge.DebitSuccessfulWC, charge.Shape{Cores: 32}, u)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(amount)
	// Output:
	// charge under DEBITSUCCESSFULWC, job completed
	//   Processors = 4 dedicated
	//   WallDuration = 28800 s
	//   ConsumptionRate = 1
	// time-scaled = (VBR + NBR) × ConsumptionRate × WallDuration = 241920
	//   VBR Processors: 4 × 1 × 7200 s × 1 = 28800 [Fri 2026-11-20 18:00 CET – 20:00 CET, base]
	//   VBR Processors: 4 × 1 × 14400 s × 0.5 = 28800 [Fri 2026-11-20 20:00 CET – Sat 2026-11-21 00:00 CET, night 20:00–06:00]
	//   VBR Processors: 4 × 1 × 7200 s × 0.4 = 11520 [Sat 2026-11-21 00:00 CET – 02:00 CET, night 20:00–06:00 × weekend Saturday,Sunday]
	//   VBR GPUs: 1 × 10 × 7200 s × 1 = 72000 [Fri 2026-11-20 18:00 CET – 20:00 CET, base]
	//   VBR GPUs: 1 × 10 × 14400 s × 0.5 = 72000 [Fri 2026-11-20 20:00 CET – Sat 2026-11-21 00:00 CET, night 20:00–06:00]
	//   VBR GPUs: 1 × 10 × 7200 s × 0.4 = 28800 [Sat 2026-11-21 00:00 CET – 02:00 CET, night 20:00–06:00 × weekend Saturday,Sunday]
	// usage = VBU + NBU = 0
	// multiplier = VBM × NBM = 2
	//   NBM QualityOfService=premium: 1 × 2 = 2
	// fees = VBF + NBF = 50
	//   NBF Partition=gpu: 1 × 50 = 50
	// charge = (241920 + 0) × 2 + 50 = 483890 → 483890.00 (half-even to 2 places)
}
