package charge

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// FuzzDecodeRateTable: any input either fails with an error, or decodes to
// a valid table that survives an encode/decode round trip unchanged and
// prices a job without panicking.
func FuzzDecodeRateTable(f *testing.F) {
	f.Add([]byte(exampleTable))
	f.Add([]byte(`{"precision": 0, "rates": [{"type": "VBR", "name": "Processors", "rate": "1"}]}`))
	f.Add([]byte(`{"rates": [{"type": "NBU", "name": "License", "instance": "*", "rate": 1e-18}]}`))
	f.Add([]byte(`{"rates": [], "time_of_day": [{"start": "23:00", "end": "00:00", "multiplier": "2"}], "location": "Asia/Kolkata"}`))
	f.Add([]byte(`{"rates": [{"type": "VBR", "name": "Processors", "rate": "1e9999"}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		table, err := DecodeRateTable(data)
		if err != nil {
			return
		}
		if err := table.Validate(); err != nil {
			t.Fatalf("decoded an invalid table: %v", err)
		}
		encoded, err := json.Marshal(table)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeRateTable(encoded)
		if err != nil {
			t.Fatalf("cannot decode own encoding %s: %v", encoded, err)
		}
		if reencoded, _ := json.Marshal(again); string(reencoded) != string(encoded) {
			t.Fatalf("round trip changed the table:\n%s\n%s", encoded, reencoded)
		}
		u := Usage{
			Resources: Resources{
				Processors: 4, Nodes: 1, GPUs: 1, MemoryMB: 1000, DiskMB: 10,
				QOS: "premium", Partition: "gpu", NodeType: "fat", Licenses: map[string]int64{"matlab": 1},
			},
			WallclockSeconds: 90061, CPUSeconds: 1000, State: Completed,
			Start: time.Date(2026, 3, 28, 23, 59, 59, 0, time.UTC),
		}
		a, err := Price(table, DebitAllPE, Shape{Cores: 8, MemoryMB: 3000, GPUs: 3}, u)
		if err != nil {
			if !errors.Is(err, ErrUnknownInstance) {
				t.Fatalf("a valid table failed to price: %v", err)
			}
			return
		}
		if a.Credits.IsNegative() {
			t.Fatalf("negative charge %s", a.Credits)
		}
	})
}

func FuzzParsePolicy(f *testing.F) {
	for _, name := range policyNames {
		f.Add(name)
	}
	f.Add("debitallwc ")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePolicy(s)
		if err != nil {
			if !errors.Is(err, ErrUnknownPolicy) || p != 0 {
				t.Fatalf("ParsePolicy(%q) = %v, %v", s, p, err)
			}
			return
		}
		if back, err := ParsePolicy(p.String()); back != p || err != nil {
			t.Fatalf("%q → %v → %v, %v", s, p, back, err)
		}
		var fromText Policy
		if err := fromText.UnmarshalText([]byte(s)); err != nil || fromText != p {
			t.Fatalf("UnmarshalText(%q) = %v, %v", s, fromText, err)
		}
	})
}

func FuzzParseExitState(f *testing.F) {
	for _, name := range exitStateNames {
		f.Add(name)
	}
	f.Add("CANCELLED by 0")
	f.Fuzz(func(t *testing.T, s string) {
		state, err := ParseExitState(s)
		if err != nil {
			if !errors.Is(err, ErrUnknownExitState) || state != 0 {
				t.Fatalf("ParseExitState(%q) = %v, %v", s, state, err)
			}
			return
		}
		if back, err := ParseExitState(state.String()); back != state || err != nil {
			t.Fatalf("%q → %v → %v, %v", s, state, back, err)
		}
	})
}

func FuzzParseClock(f *testing.F) {
	for _, s := range []string{"00:00", "23:59", "24:00", "9:30", "09:3x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sod, err := parseClock(s)
		if err != nil {
			if !errors.Is(err, ErrBadWindow) {
				t.Fatalf("parseClock(%q): %v", s, err)
			}
			return
		}
		if sod < 0 || sod >= secondsPerDay || sod%60 != 0 {
			t.Fatalf("parseClock(%q) = %d", s, sod)
		}
		if back := time.Date(2000, 1, 1, 0, 0, sod, 0, time.UTC).Format("15:04"); back != s {
			t.Fatalf("parseClock(%q) = %d, which is %s", s, sod, back)
		}
	})
}

// FuzzWindowSplit: however a WallDuration falls across windows, zone
// changes and midnights, its stretches are contiguous, cover it exactly,
// and each carries the multiplier its windows give.
func FuzzWindowSplit(f *testing.F) {
	f.Add(int64(1772949600), int64(10800), uint8(0)) // 2026-03-08 06:00 UTC: New York springs forward
	f.Add(int64(1793507400), int64(10800), uint8(0)) // 2026-11-01 04:30 UTC: New York falls back
	f.Add(int64(1795212000), int64(1209600), uint8(1))
	f.Add(int64(0), int64(1), uint8(2))
	zones := []string{"America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "", "Pacific/Apia"}
	f.Fuzz(func(t *testing.T, startUnix, seconds int64, zone uint8) {
		seconds %= 4 * 7 * 24 * 3600 // a month of stretches is plenty to find an edge case
		if seconds < 0 {
			seconds = -seconds
		}
		table := nightsAndWeekends(zones[int(zone)%len(zones)])
		table.TimeOfDay = append(table.TimeOfDay, TimeWindow{Name: "dawn", Start: "06:00", End: "06:30", Multiplier: dec("3")})
		w, err := table.compileWindows()
		if err != nil {
			t.Fatal(err)
		}
		start := time.Unix(startUnix%(1<<40), 0)
		at := start
		var total int64
		for _, s := range w.split(start, seconds) {
			if !s.from.Equal(at) || s.seconds <= 0 || !s.to.Equal(s.from.Add(time.Duration(s.seconds)*time.Second)) {
				t.Fatalf("stretch %v (%d s) does not follow %v", s, s.seconds, at)
			}
			local := s.from
			_, want := w.at(local.Hour()*3600+local.Minute()*60+local.Second(), local.Weekday())
			if !want.Equal(s.multiplier) {
				t.Fatalf("stretch %v has multiplier %s, its start reads %s", s, s.multiplier, want)
			}
			at, total = s.to, total+s.seconds
		}
		if total != seconds {
			t.Fatalf("stretches cover %d s of %d", total, seconds)
		}
	})
}
