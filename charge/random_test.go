package charge

import (
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// randomCase is one pricing problem drawn by randomCases: a table, a
// policy, a shape, and a usage to charge or a request to quote.
type randomCase struct {
	table   RateTable
	policy  Policy
	shape   Shape
	usage   Usage
	request Request
}

// randomCases draws n pricing problems from a fixed seed, so a failure
// can be replayed. They cover every rate type and policy, odd precisions,
// time and day windows in zones with daylight saving time (half-hour ones
// too), values in any case, unlisted values, zero and huge quantities and
// rates (beyond int64 once multiplied, so the exact fallback runs), and a
// share of invalid inputs, whose errors must agree too.
func randomCases(seed uint64, n int) []randomCase {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cases := make([]randomCase, n)
	for i := range cases {
		table := randomTable(r)
		wallLimit := int64(MaxSeconds)
		if len(table.TimeOfDay)+len(table.DaysOfWeek) > 0 {
			wallLimit = 40 * 24 * 3600 // a long job under windows is thousands of stretches
		}
		res := randomResources(r)
		u := Usage{
			Resources:             res,
			WallclockSeconds:      randomInt(r, wallLimit),
			WallclockLimitSeconds: randomInt(r, wallLimit),
			CPUSeconds:            randomInt(r, MaxCPUSeconds),
			Start:                 randomStart(r),
			State:                 ExitState(r.IntN(len(exitStateNames)) + 1),
		}
		switch r.IntN(10) {
		case 0:
			u.CPUSeconds = u.Processors * u.WallclockSeconds * int64(r.IntN(3)) / 2
		case 1:
			u.Start = time.Time{}
		case 2:
			u.End = u.Start.Add(time.Duration(u.WallclockSeconds+randomInt(r, 3)-1) * time.Second)
		case 3:
			u.WallclockLimitSeconds = u.WallclockSeconds
		}
		cases[i] = randomCase{
			table:   table,
			policy:  Policy(r.IntN(len(policyNames)) + 1),
			shape:   Shape{Cores: randomInt(r, 256), MemoryMB: randomInt(r, MaxMB), GPUs: randomInt(r, 16), DiskMB: randomInt(r, MaxMB)},
			usage:   u,
			request: Request{Resources: res, WallclockLimitSeconds: u.WallclockLimitSeconds, Start: u.Start},
		}
	}
	return cases
}

// randomInt is mostly small, sometimes up to max, sometimes 0 or max.
func randomInt(r *rand.Rand, max int64) int64 {
	switch r.IntN(8) {
	case 0:
		return 0
	case 1:
		return max
	case 2:
		return r.Int64N(max + 1)
	}
	return r.Int64N(min(max, 100_000) + 1)
}

var (
	randomZones  = []string{"", "UTC", "America/New_York", "Europe/Paris", "Australia/Lord_Howe", "Asia/Kolkata", "America/Santiago"}
	randomValues = map[string][]string{
		"QualityOfService": {"premium", "normal", "low"},
		"Partition":        {"gpu", "cpu", "debug"},
		"NodeType":         {"fat", "thin"},
		"License":          {"matlab", "abaqus", "ansys"},
	}
	randomClocks = []string{"00:00", "06:00", "08:30", "12:00", "18:00", "20:00", "22:45", "23:59"}
)

func randomTable(r *rand.Rand) RateTable {
	t := RateTable{Precision: int32(r.IntN(int(MaxPrecision) + 1)), Location: randomZones[r.IntN(len(randomZones))]}
	if r.IntN(4) == 0 {
		t.Precision = int32([]int{0, 2}[r.IntN(2)])
	}
	listed := map[rateKey]bool{}
	for range r.IntN(14) {
		typ := []RateType{VBR, NBR, VBU, NBU, VBM, NBM, VBF, NBF}[r.IntN(8)]
		rate := ChargeRate{Type: typ, Rate: randomRate(r)}
		if rateTypes[typ].nameBased {
			rate.Name = propertyNames[r.IntN(len(propertyNames))]
			rate.Instance = Wildcard
			if values := randomValues[rate.Name]; r.IntN(4) != 0 {
				rate.Instance = randomSpelling(r, values[r.IntN(len(values))])
			}
		} else {
			rate.Name = valueNames[r.IntN(len(valueNames))]
		}
		key, err := rate.key()
		if (err != nil || listed[key]) && r.IntN(50) != 0 { // now and then a bad or repeated rate
			continue
		}
		listed[key] = true
		if r.IntN(3) == 0 {
			rate.Name = strings.ToLower(rate.Name)
		}
		t.Rates = append(t.Rates, rate)
	}
	// Most tables that price a property take the values they do not list.
	for _, property := range propertyNames {
		if key := (rateKey{NBU, property, Wildcard}); !listed[key] && r.IntN(4) != 0 {
			t.Rates = append(t.Rates, ChargeRate{Type: NBU, Name: property, Instance: Wildcard, Rate: randomRate(r)})
		}
	}
	if r.IntN(3) == 0 {
		return t
	}
	// Up to two windows between sorted clock times, the second one
	// wrapping past midnight, so that they never overlap.
	clocks := slices.Clone(randomClocks)
	r.Shuffle(len(clocks), func(i, j int) { clocks[i], clocks[j] = clocks[j], clocks[i] })
	clocks = clocks[:4]
	slices.Sort(clocks)
	for i := range r.IntN(3) {
		start, end := clocks[2*i], clocks[2*i+1]
		if i == 1 {
			start, end = clocks[3], clocks[0]
		}
		t.TimeOfDay = append(t.TimeOfDay, TimeWindow{Name: []string{"", "night", "peak"}[r.IntN(3)], Start: start, End: end, Multiplier: randomRate(r)})
	}
	days := []string{"Sunday", "mon", "TUE", "Wednesday", "thu", "Friday", "sat"}
	r.Shuffle(len(days), func(i, j int) { days[i], days[j] = days[j], days[i] })
	for len(days) > 0 && r.IntN(2) == 0 {
		n := 1 + r.IntN(len(days))
		t.DaysOfWeek = append(t.DaysOfWeek, DayWindow{Name: "days", Days: days[:n], Multiplier: randomRate(r)})
		days = days[n:]
	}
	return t
}

// randomRate is a rate or multiplier: a whole number, a short or long
// fraction, or an extreme one (10^12, 10^-18, 10^12 − 10^-18), now and
// then out of bounds.
func randomRate(r *rand.Rand) decimal.Decimal {
	switch r.IntN(12) {
	case 0:
		return decimal.Zero
	case 1:
		return decimal.New(1, -18)
	case 2:
		return maxRate
	case 3:
		return maxRate.Sub(decimal.New(1, -18))
	case 4:
		return decimal.New(r.Int64N(1_000_000_000_000_000_000), -6-int32(r.IntN(13)))
	case 5:
		if r.IntN(20) == 0 {
			return decimal.New(-1, 0) // refused
		}
		return decimal.New(1, 0)
	case 6:
		return decimal.New(r.Int64N(1000)*10, -1-int32(r.IntN(4))) // a trailing zero
	}
	return decimal.New(r.Int64N(10_000), -int32(r.IntN(5)))
}

func randomResources(r *rand.Rand) Resources {
	res := Resources{
		Processors: randomInt(r, MaxCount), Nodes: randomInt(r, MaxCount), GPUs: randomInt(r, MaxCount),
		MemoryMB: randomInt(r, MaxMB), DiskMB: randomInt(r, MaxMB),
	}
	pick := func(property string) string {
		values := randomValues[property]
		switch i := r.IntN(len(values) + 10); {
		case i < len(values):
			return randomSpelling(r, values[i])
		case i == len(values):
			return "Unlisted"
		case i < len(values)+6:
			return values[0]
		}
		return ""
	}
	res.QOS, res.Partition, res.NodeType = pick("QualityOfService"), pick("Partition"), pick("NodeType")
	for range r.IntN(3) {
		if res.Licenses == nil {
			res.Licenses = map[string]int64{}
		}
		if name := pick("License"); name != "" || r.IntN(20) == 0 {
			res.Licenses[name] = randomInt(r, MaxCount)
		}
	}
	return res
}

// randomSpelling spells s in upper or lower case now and then.
func randomSpelling(r *rand.Rand, s string) string {
	switch r.IntN(4) {
	case 0:
		return strings.ToUpper(s)
	case 1:
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// randomStart is an instant in 2024–2027, often next to a daylight
// saving change in New York, Paris or Lord Howe.
func randomStart(r *rand.Rand) time.Time {
	near := []time.Time{
		time.Date(2026, 3, 8, 6, 0, 0, 0, time.UTC),   // New York springs forward
		time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC),  // New York falls back
		time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC),  // Paris springs forward
		time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), // Paris falls back
		time.Date(2026, 4, 4, 14, 0, 0, 0, time.UTC),  // Lord Howe's half hour
	}
	if r.IntN(2) == 0 {
		return near[r.IntN(len(near))].Add(time.Duration(r.Int64N(48*3600)-24*3600) * time.Second)
	}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	return base.Add(time.Duration(r.Int64N(4*365*24*3600)) * time.Second).Add(time.Duration(r.IntN(2)) * time.Millisecond)
}
