package slurm

import (
	"fmt"
	"strings"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
)

// SlurmReservation is a reservation as `scontrol -o show reservation`
// describes it.
type SlurmReservation struct {
	Name       string
	Start, End time.Time
	CPUs       int64
	Users      []string
	Accounts   []string // "-name" excludes
	State      string
}

// ParseReservations reads `scontrol -o show reservation`: one reservation
// a line of Key=Value fields (an administrator writes every one of them),
// or "No reservations in the system".
func ParseReservations(out string, loc *time.Location) ([]SlurmReservation, error) {
	var rs []SlurmReservation
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" || strings.HasPrefix(line, "No reservations") {
			continue
		}
		f := map[string]string{}
		for _, field := range strings.Fields(line) {
			k, v, _ := strings.Cut(field, "=")
			f[k] = v
		}
		r, err := reservation(f, loc)
		if err != nil {
			return nil, fmt.Errorf("slurm: reservation %s: %w", ledger.Excerpt(f["ReservationName"]), err)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func reservation(f map[string]string, loc *time.Location) (SlurmReservation, error) {
	r := SlurmReservation{Name: f["ReservationName"], State: f["State"], Users: list(f["Users"]), Accounts: list(f["Accounts"])}
	if r.Name == "" {
		return r, fmt.Errorf("no ReservationName")
	}
	var err error
	if r.Start, err = localTime("StartTime", f["StartTime"], loc); err != nil {
		return r, err
	}
	if r.End, err = localTime("EndTime", f["EndTime"], loc); err != nil {
		return r, err
	}
	tres, err := ParseTRES(f["TRES"])
	if err != nil {
		return r, err
	}
	r.CPUs = tres["cpu"]
	if r.CPUs == 0 {
		if r.CPUs, err = count("CoreCnt", f["CoreCnt"]); err != nil {
			return r, err
		}
	}
	return r, nil
}

// list splits a comma-separated list; unset is empty.
func list(s string) []string {
	if unset(s) == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// ChargeAccount is the one account a reservation is for, which its idle
// time is charged to: "" when it names none, several, or excludes some.
func (r SlurmReservation) ChargeAccount() string {
	if len(r.Accounts) != 1 || strings.HasPrefix(r.Accounts[0], "-") {
		return ""
	}
	return r.Accounts[0]
}
