package charge

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// nightsAndWeekends: 1 credit per processor-second; nights 20:00–06:00
// × 0.5; Saturdays and Sundays × 0.8; a weekend night × 0.4.
func nightsAndWeekends(location string) RateTable {
	table := DefaultRateTable()
	table.Location = location
	table.TimeOfDay = []TimeWindow{{Name: "night", Start: "20:00", End: "06:00", Multiplier: dec("0.5")}}
	table.DaysOfWeek = []DayWindow{{Name: "weekend", Days: []string{"Saturday", "Sunday"}, Multiplier: dec("0.8")}}
	return table
}

// TestPiecewise prices one processor across window boundaries. The
// numbers are seconds × multiplier, stretch by stretch.
func TestPiecewise(t *testing.T) {
	chicago, err := time.LoadLocation("America/Chicago")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		location string
		start    time.Time
		seconds  int64
		want     string
		pieces   []string // seconds × multiplier of each stretch
	}{
		{
			// Wednesday 18:00 to Thursday 04:00: 2 h by day, 8 h of night
			// (one stretch: midnight changes no window).
			name: "across midnight", start: time.Date(2026, 11, 18, 18, 0, 0, 0, time.UTC), seconds: 10 * 3600,
			want: "21600", pieces: []string{"7200×1", "28800×0.5"}, // 7200 + 14400
		},
		{
			// Friday 22:00 to Saturday 02:00: a weekday night, then a weekend night.
			name: "into the weekend", start: time.Date(2026, 11, 20, 22, 0, 0, 0, time.UTC), seconds: 4 * 3600,
			want: "6480", pieces: []string{"7200×0.5", "7200×0.4"}, // 3600 + 2880
		},
		{
			// Sunday 18:00 to Monday 08:00.
			name: "out of the weekend", start: time.Date(2026, 11, 22, 18, 0, 0, 0, time.UTC), seconds: 14 * 3600,
			want: "29520", pieces: []string{"7200×0.8", "14400×0.4", "21600×0.5", "7200×1"}, // 5760 + 5760 + 10800 + 7200
		},
		{
			// The same instants read in Chicago (UTC−6 in November):
			// Sunday 12:00 to Monday 02:00 local.
			name: "in a time zone", location: "America/Chicago", start: time.Date(2026, 11, 22, 18, 0, 0, 0, time.UTC), seconds: 14 * 3600,
			want: "32400", pieces: []string{"28800×0.8", "14400×0.4", "7200×0.5"}, // 23040 + 5760 + 3600
		},
		{
			// A start given in another zone means the same instant.
			name: "start in another zone", location: "America/Chicago", start: time.Date(2026, 11, 22, 12, 0, 0, 0, chicago), seconds: 14 * 3600,
			want: "32400", pieces: []string{"28800×0.8", "14400×0.4", "7200×0.5"},
		},
		{
			name: "no boundary", start: time.Date(2026, 11, 18, 9, 0, 0, 0, time.UTC), seconds: 3600,
			want: "3600", pieces: []string{"3600×1"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := Usage{Resources: Resources{Processors: 1}, WallclockSeconds: c.seconds, Start: c.start, State: Completed}
			a, err := Price(nightsAndWeekends(c.location), DebitAllWC, Shape{}, u)
			if err != nil {
				t.Fatal(err)
			}
			if !a.Credits.Equal(dec(c.want)) {
				t.Errorf("credits = %s, want %s\n%s", a.Credits, c.want, a)
			}
			var pieces []string
			for _, item := range a.Explanation.Items {
				pieces = append(pieces, itemPiece(item))
			}
			if strings.Join(pieces, " ") != strings.Join(c.pieces, " ") {
				t.Errorf("pieces %v, want %v\n%s", pieces, c.pieces, a)
			}
		})
	}
}

// itemPiece writes a time-scaled item as seconds×multiplier.
func itemPiece(item LineItem) string { return fmt.Sprintf("%d×%s", item.Seconds, item.Multiplier) }

// TestDaylightSaving: a second is priced by the wall-clock reading it
// shows in the table's zone (America/New_York here).
func TestDaylightSaving(t *testing.T) {
	table := DefaultRateTable()
	table.Location = "America/New_York"
	cases := []struct {
		name   string
		window TimeWindow
		start  time.Time
		want   string
		pieces []string
	}{
		{
			// 2026-03-08: clocks jump from 02:00 EST to 03:00 EDT. A job
			// from 01:00 EST for 3 real hours ends at 05:00 EDT: 1 h
			// before the gap at base rate, then 2 h inside a 02:30–05:00
			// window (no second shows 02:30–03:00 that night).
			name:   "spring forward",
			window: TimeWindow{Name: "early", Start: "02:30", End: "05:00", Multiplier: dec("0.5")},
			start:  time.Date(2026, 3, 8, 6, 0, 0, 0, time.UTC),
			want:   "7200", pieces: []string{"3600×1", "7200×0.5"}, // 3600 + 3600
		},
		{
			// 2026-11-01: clocks fall back from 02:00 EDT to 01:00 EST. A
			// job from 00:30 EDT for 3 real hours ends at 02:30 EST; the
			// 01:00–02:00 window is crossed twice.
			name:   "fall back",
			window: TimeWindow{Name: "one", Start: "01:00", End: "02:00", Multiplier: dec("0.5")},
			start:  time.Date(2026, 11, 1, 4, 30, 0, 0, time.UTC),
			want:   "7200", pieces: []string{"1800×1", "7200×0.5", "1800×1"}, // 1800 + 3600 + 1800
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			table.TimeOfDay = []TimeWindow{c.window}
			u := Usage{Resources: Resources{Processors: 1}, WallclockSeconds: 3 * 3600, Start: c.start, State: Completed}
			a, err := Price(table, DebitAllWC, Shape{}, u)
			if err != nil {
				t.Fatal(err)
			}
			var pieces []string
			for _, item := range a.Explanation.Items {
				pieces = append(pieces, itemPiece(item))
			}
			if !a.Credits.Equal(dec(c.want)) || strings.Join(pieces, " ") != strings.Join(c.pieces, " ") {
				t.Errorf("credits %s pieces %v, want %s %v\n%s", a.Credits, pieces, c.want, c.pieces, a)
			}
		})
	}
}

func TestWindowNeedsStart(t *testing.T) {
	u := Usage{Resources: Resources{Processors: 1}, WallclockSeconds: 60, State: Completed}
	if _, err := Price(nightsAndWeekends(""), DebitAllWC, Shape{}, u); !errors.Is(err, ErrNoStartTime) {
		t.Errorf("err = %v, want ErrNoStartTime", err)
	}
}

func TestWindowValidation(t *testing.T) {
	night := TimeWindow{Start: "20:00", End: "06:00", Multiplier: dec("0.5")}
	cases := []struct {
		name  string
		clock []TimeWindow
		days  []DayWindow
		loc   string
		want  error
	}{
		{"good", []TimeWindow{night, {Start: "12:00", End: "13:00", Multiplier: dec("2")}}, nil, "", nil},
		{"touching windows", []TimeWindow{night, {Start: "06:00", End: "20:00", Multiplier: dec("1.5")}}, nil, "", nil},
		{"to midnight", []TimeWindow{{Start: "18:00", End: "00:00", Multiplier: dec("1")}}, nil, "", nil},
		{"overlap", []TimeWindow{night, {Start: "05:00", End: "07:00", Multiplier: dec("2")}}, nil, "", ErrOverlappingWindows},
		{"overlap across midnight", []TimeWindow{night, {Start: "23:00", End: "01:00", Multiplier: dec("2")}}, nil, "", ErrOverlappingWindows},
		{"empty window", []TimeWindow{{Start: "08:00", End: "08:00", Multiplier: dec("2")}}, nil, "", ErrBadWindow},
		{"bad time", []TimeWindow{{Start: "8:00", End: "09:00", Multiplier: dec("2")}}, nil, "", ErrBadWindow},
		{"hour 24", []TimeWindow{{Start: "20:00", End: "24:00", Multiplier: dec("2")}}, nil, "", ErrBadWindow},
		{"negative multiplier", []TimeWindow{{Start: "20:00", End: "21:00", Multiplier: dec("-1")}}, nil, "", ErrNegativeRate},
		{"days share a day", nil, []DayWindow{{Days: []string{"Sat", "Sun"}, Multiplier: dec("0.8")}, {Days: []string{"Sunday"}, Multiplier: dec("0.5")}}, "", ErrOverlappingWindows},
		{"day twice", nil, []DayWindow{{Days: []string{"Sat", "saturday"}, Multiplier: dec("0.8")}}, "", ErrBadWindow},
		{"unknown day", nil, []DayWindow{{Days: []string{"Caturday"}, Multiplier: dec("0.8")}}, "", ErrBadWindow},
		{"no days", nil, []DayWindow{{Multiplier: dec("0.8")}}, "", ErrBadWindow},
		{"unknown zone", nil, nil, "Mars/Olympus_Mons", ErrUnknownLocation},
		{"host zone", nil, nil, "Local", ErrUnknownLocation},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			table := DefaultRateTable()
			table.TimeOfDay, table.DaysOfWeek, table.Location = c.clock, c.days, c.loc
			if err := table.Validate(); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestParseClock(t *testing.T) {
	for in, want := range map[string]int{"00:00": 0, "06:30": 23400, "23:59": 86340} {
		if got, err := parseClock(in); got != want || err != nil {
			t.Errorf("parseClock(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "6:30", "06:60", "24:00", "06-30", "0630 ", "+6:30", "٠٦:٣٠"} {
		if _, err := parseClock(in); !errors.Is(err, ErrBadWindow) {
			t.Errorf("parseClock(%q): err = %v", in, err)
		}
	}
}
