package charge

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // a table's zone must mean the same thing on every host, with or without zoneinfo files

	"github.com/shopspring/decimal"
)

// TimeWindow multiplies the time-scaled part of a charge for the seconds
// whose local wall-clock time lies in [Start, End). Times are "HH:MM" in the
// rate table's Location; End before Start wraps past midnight ("20:00" to
// "06:00" is the night), End "00:00" means midnight at the end of the day.
type TimeWindow struct {
	Name       string          `json:"name,omitempty"`
	Start      string          `json:"start"`
	End        string          `json:"end"`
	Multiplier decimal.Decimal `json:"multiplier"`
}

// DayWindow multiplies the time-scaled part of a charge for the seconds
// that fall on one of its days (local midnight to midnight in the rate
// table's Location). Days are English day names or their first three
// letters, in any case; a decoded table stores the full names.
type DayWindow struct {
	Name       string          `json:"name,omitempty"`
	Days       []string        `json:"days"`
	Multiplier decimal.Decimal `json:"multiplier"`
}

const secondsPerDay = 24 * 60 * 60

// windows is the parsed form of a table's time windows.
type windows struct {
	loc   *time.Location
	clock []clockWindow
	days  []dayWindow
	edges []int // seconds after local midnight where some window starts or ends, and 0
}

type clockWindow struct {
	label      string
	start, end int // seconds after local midnight
	multiplier fraction
}

type dayWindow struct {
	label      string
	days       [7]bool
	multiplier fraction
}

// contains reports whether the local time of day sod (seconds after
// midnight) lies in the window.
func (w clockWindow) contains(sod int) bool {
	if w.start < w.end {
		return w.start <= sod && sod < w.end
	}
	return sod >= w.start || sod < w.end
}

// arcs returns the window as one or two intervals of the day, [from, to).
func (w clockWindow) arcs() [][2]int {
	if w.start < w.end {
		return [][2]int{{w.start, w.end}}
	}
	return [][2]int{{w.start, secondsPerDay}, {0, w.end}}
}

// compileWindows parses and checks the windows. At most one time-of-day
// window and one day-of-week window cover any instant, so that the
// multiplier of a second is never ambiguous; where one of each covers it,
// their multipliers multiply (a weekend night at 0.5 × 0.8 costs 0.4).
func (t RateTable) compileWindows() (windows, error) {
	loc, err := loadLocation(t.Location)
	if err != nil {
		return windows{}, err
	}
	w := windows{loc: loc, edges: []int{0}}
	for i, tw := range t.TimeOfDay {
		cw, err := tw.compile()
		if err != nil {
			return windows{}, fmt.Errorf("%w (time_of_day[%d])", err, i)
		}
		for j, other := range w.clock {
			if arcsOverlap(cw.arcs(), other.arcs()) {
				return windows{}, fmt.Errorf("%w: time_of_day[%d] %s and time_of_day[%d] %s", ErrOverlappingWindows, j, other.label, i, cw.label)
			}
		}
		w.clock = append(w.clock, cw)
		w.edges = append(w.edges, cw.start, cw.end)
	}
	for i, dw := range t.DaysOfWeek {
		c, err := dw.compile()
		if err != nil {
			return windows{}, fmt.Errorf("%w (days_of_week[%d])", err, i)
		}
		for j, other := range w.days {
			for d := range c.days {
				if c.days[d] && other.days[d] {
					return windows{}, fmt.Errorf("%w: days_of_week[%d] %s and days_of_week[%d] %s share %s", ErrOverlappingWindows, j, other.label, i, c.label, time.Weekday(d))
				}
			}
		}
		w.days = append(w.days, c)
	}
	slices.Sort(w.edges)
	w.edges = slices.Compact(w.edges)
	return w, nil
}

func arcsOverlap(a, b [][2]int) bool {
	for _, x := range a {
		for _, y := range b {
			if x[0] < y[1] && y[0] < x[1] {
				return true
			}
		}
	}
	return false
}

func (tw TimeWindow) compile() (clockWindow, error) {
	start, err := parseClock(tw.Start)
	if err != nil {
		return clockWindow{}, err
	}
	end, err := parseClock(tw.End)
	if err != nil {
		return clockWindow{}, err
	}
	label := strings.TrimSpace(fmt.Sprintf("%s %s–%s", tw.Name, tw.Start, tw.End))
	if start == end {
		return clockWindow{}, fmt.Errorf("%w: %s is empty (start equals end; a whole day is a day-of-week window)", ErrBadWindow, label)
	}
	if err := checkRate(tw.Multiplier, "multiplier of "+label); err != nil {
		return clockWindow{}, err
	}
	return clockWindow{label: label, start: start, end: end, multiplier: fractionOfDecimal(tw.Multiplier)}, nil
}

func (dw DayWindow) compile() (dayWindow, error) {
	c := dayWindow{label: strings.TrimSpace(dw.Name + " " + strings.Join(dw.Days, ","))}
	if len(dw.Days) == 0 {
		return dayWindow{}, fmt.Errorf("%w: day window %q names no day", ErrBadWindow, c.label)
	}
	for _, name := range dw.Days {
		d, ok := weekdayByName(name)
		if !ok {
			return dayWindow{}, fmt.Errorf("%w: day window %q: unknown day %q", ErrBadWindow, c.label, name)
		}
		if c.days[d] {
			return dayWindow{}, fmt.Errorf("%w: day window %q names %s twice", ErrBadWindow, c.label, d)
		}
		c.days[d] = true
	}
	if err := checkRate(dw.Multiplier, "multiplier of "+c.label); err != nil {
		return dayWindow{}, err
	}
	c.multiplier = fractionOfDecimal(dw.Multiplier)
	return c, nil
}

// parseClock reads a local wall-clock time "HH:MM" (00:00 to 23:59) and
// returns the seconds after midnight.
func parseClock(s string) (int, error) {
	if len(s) != len("15:04") || s[2] != ':' || !digits(s[:2]) || !digits(s[3:]) {
		return 0, fmt.Errorf("%w: time %q is not HH:MM", ErrBadWindow, s)
	}
	h := int(s[0]-'0')*10 + int(s[1]-'0')
	m := int(s[3]-'0')*10 + int(s[4]-'0')
	if h > 23 || m > 59 {
		return 0, fmt.Errorf("%w: time %q is not between 00:00 and 23:59", ErrBadWindow, s)
	}
	return h*3600 + m*60, nil
}

func digits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// weekdayByName reads "Saturday" or "sat", in any case.
func weekdayByName(s string) (time.Weekday, bool) {
	for d := time.Sunday; d <= time.Saturday; d++ {
		if strings.EqualFold(s, d.String()) || strings.EqualFold(s, d.String()[:3]) {
			return d, true
		}
	}
	return 0, false
}

// locations caches loaded zones: time.LoadLocation reads and parses zone
// data on every call, and every priced job needs its table's zone.
var locations sync.Map // IANA name → *time.Location

// loadLocation resolves an IANA zone name; empty means UTC. "Local" is
// refused: a price must not depend on the host the bank runs on.
func loadLocation(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if cached, ok := locations.Load(name); ok {
		return cached.(*time.Location), nil
	}
	if name == "Local" {
		return nil, fmt.Errorf("%w: %q depends on the host; name an IANA zone such as \"Europe/Paris\"", ErrUnknownLocation, name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownLocation, name)
	}
	locations.Store(name, loc)
	return loc, nil
}

// segment is a stretch of a job's WallDuration over which the same windows
// apply.
type segment struct {
	from, to   time.Time // in the table's location
	seconds    int64
	labels     []string // the windows that apply; none for the base rate
	multiplier fraction
}

func (s segment) String() string {
	const layout = "Mon 2006-01-02 15:04 MST"
	to := s.to.Format(layout)
	if s.to.YearDay() == s.from.YearDay() && s.to.Year() == s.from.Year() {
		to = s.to.Format("15:04 MST")
	}
	applies := "base"
	if len(s.labels) > 0 {
		applies = strings.Join(s.labels, " × ")
	}
	return fmt.Sprintf("%s – %s, %s", s.from.Format(layout), to, applies)
}

// at returns the windows covering an instant whose local time of day is
// sod on weekday day, and the product of their multipliers.
func (w windows) at(sod int, day time.Weekday) ([]string, fraction) {
	var labels []string
	m := integer(1)
	for _, c := range w.clock {
		if c.contains(sod) {
			labels = append(labels, c.label)
			m = m.mul(c.multiplier)
		}
	}
	for _, d := range w.days {
		if d.days[day] {
			labels = append(labels, d.label)
			m = m.mul(d.multiplier)
		}
	}
	return labels, m
}

// split lays seconds of WallDuration from start on and cuts them where the
// local wall clock crosses a window edge or midnight, or where the zone's
// offset changes. A second is classified by the local clock reading it
// shows: in a spring-forward gap no second reads 02:30, and in a fall-back
// overlap the repeated hour is priced twice as the clock shows it.
// Adjacent pieces under the same windows are merged.
func (w windows) split(start time.Time, seconds int64) []segment {
	var segs []segment
	end := start.Add(time.Duration(seconds) * time.Second)
	for cur := start.In(w.loc); cur.Before(end); {
		sod := cur.Hour()*3600 + cur.Minute()*60 + cur.Second()
		next := cur.Add(time.Duration(w.nextEdge(sod)-sod) * time.Second)
		if _, zoneEnd := cur.ZoneBounds(); !zoneEnd.IsZero() && zoneEnd.Before(next) {
			next = zoneEnd
		}
		if end.Before(next) {
			next = end.In(w.loc)
		}
		labels, m := w.at(sod, cur.Weekday())
		n := int64(next.Sub(cur) / time.Second)
		if last := len(segs) - 1; last >= 0 && slices.Equal(segs[last].labels, labels) {
			segs[last].to = next
			segs[last].seconds += n
		} else {
			segs = append(segs, segment{from: cur, to: next, seconds: n, labels: labels, multiplier: m})
		}
		cur = next
	}
	return segs
}

// nextEdge returns the first window edge strictly after sod, or the next
// midnight (secondsPerDay).
func (w windows) nextEdge(sod int) int {
	i, found := slices.BinarySearch(w.edges, sod)
	if found {
		i++
	}
	if i < len(w.edges) {
		return w.edges[i]
	}
	return secondsPerDay
}

// empty reports whether the table has no windows at all.
func (w windows) empty() bool { return len(w.clock) == 0 && len(w.days) == 0 }
