package peer

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzDecodePeriod: a recorded period is refused or read as a span that
// ends after it begins; a day's name, as banks recorded the last day
// reported, is that day.
func FuzzDecodePeriod(f *testing.F) {
	for _, s := range []string{`"2026-11-28"`, `"2026-11"`, `{"name":"x","from":"2026-11-28T10:00:00Z","to":"2026-11-28T11:00:00Z"}`,
		`{"from":"2026-11-28T11:00:00Z","to":"2026-11-28T10:00:00Z"}`, `{}`, `null`, `""`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := decodePeriod(raw)
		if err != nil {
			return
		}
		if !p.From.Before(p.To) {
			t.Fatalf("%q: %+v", raw, p)
		}
		var name string
		if json.Unmarshal(raw, &name) != nil {
			return
		}
		if day, err := time.Parse(time.DateOnly, name); err == nil && (!p.From.Equal(day) || !p.To.Equal(day.AddDate(0, 0, 1)) || p.Name != name) {
			t.Fatalf("%q: %+v, want the day %s", raw, p, day)
		}
	})
}

// TestSpan: a UTC day is named as a day, any other span by its bounds;
// report periods divide a day.
func TestSpan(t *testing.T) {
	day := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		from, to time.Time
		want     string
	}{
		"a day":            {day, day.AddDate(0, 0, 1), "2026-11-28"},
		"an hour":          {day.Add(10 * time.Hour), day.Add(11 * time.Hour), "2026-11-28T10:00:00Z/2026-11-28T11:00:00Z"},
		"a day, not UTC's": {day.Add(time.Hour), day.Add(25 * time.Hour), "2026-11-28T01:00:00Z/2026-11-29T01:00:00Z"},
		"in another zone":  {day.In(time.FixedZone("CET", 3600)), day.Add(5 * time.Second).In(time.FixedZone("CET", 3600)), "2026-11-28T00:00:00Z/2026-11-28T00:00:05Z"},
	} {
		if got := Span(tc.from, tc.to); got.Name != tc.want {
			t.Errorf("%s: %q; want %q", name, got.Name, tc.want)
		}
	}
	for _, every := range []time.Duration{24 * time.Hour, time.Hour, 5 * time.Minute, 5 * time.Second, time.Second} {
		if err := CheckReportPeriod(every); err != nil {
			t.Errorf("%s: %v", every, err)
		}
	}
	for _, every := range []time.Duration{0, -time.Hour, 48 * time.Hour, 7 * time.Minute, 1500 * time.Millisecond, time.Millisecond} {
		if err := CheckReportPeriod(every); err == nil {
			t.Errorf("%s accepted", every)
		}
	}
}
