package peer

import (
	"fmt"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
)

// Period is a span of time the banks agree on: a day or a month in UTC,
// so that two banks in different time zones mean the same span by the
// same name; or a usage report's period (Span).
type Period struct {
	Name string    `json:"name"`
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// The layouts of a period's name.
const (
	dayLayout   = "2006-01-02"
	monthLayout = "2006-01"
)

// ParsePeriod reads a period's name: a day (2026-11-28) or a month
// (2026-11), in UTC.
func ParsePeriod(s string) (Period, error) {
	if t, err := time.Parse(dayLayout, s); err == nil {
		return Day(t), nil
	}
	if t, err := time.Parse(monthLayout, s); err == nil {
		return Period{Name: s, From: t, To: t.AddDate(0, 1, 0)}, nil
	}
	return Period{}, fmt.Errorf("%w: period %s: want a day (2026-11-28) or a month (2026-11), in UTC", ledger.ErrInvalid, ledger.Excerpt(s))
}

// Day is the UTC day t falls in.
func Day(t time.Time) Period {
	t = t.UTC()
	from := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return Period{Name: from.Format(dayLayout), From: from, To: from.AddDate(0, 0, 1)}
}

// Span is the period [from, to), in UTC: named as a day when it is one,
// else by its bounds in RFC 3339 (2026-11-28T10:00:00Z/2026-11-28T11:00:00Z).
func Span(from, to time.Time) Period {
	from, to = from.UTC(), to.UTC()
	if d := Day(from); d.From.Equal(from) && d.To.Equal(to) {
		return d
	}
	return Period{Name: from.Format(time.RFC3339Nano) + "/" + to.Format(time.RFC3339Nano), From: from, To: to}
}

// DefaultReportPeriod is the length of the periods whose usage a site
// reports to the banks that granted it allocations: a UTC day.
const DefaultReportPeriod = 24 * time.Hour

// CheckReportPeriod refuses a length of usage report periods that is not
// whole seconds dividing a day: such periods fit in UTC days, one ending
// at each midnight (hourly ones at each hour's :00).
func CheckReportPeriod(every time.Duration) error {
	if every < time.Second || every%time.Second != 0 || (24*time.Hour)%every != 0 {
		return fmt.Errorf("%w %s: want whole seconds that divide a day (24h, 1h, 5m, 5s)", ErrReportPeriod, every)
	}
	return nil
}
