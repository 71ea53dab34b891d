package peer

import (
	"fmt"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
)

// Period is a span of time the banks agree on: a day or a month in UTC,
// so that two banks in different time zones mean the same span by the
// same name. Usage is reported per day (ReportDay).
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
