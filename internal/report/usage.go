package report

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/ingot-hpc/ingot/lien"
)

// UsageTable is a usage report (lien.Usage's rows, grouped by the keys of
// by, and by period when byPeriod) as `ingot usage` prints it: the period's
// first day, the keys, then jobs, charges, charged, refunded and net.
func UsageTable(rows []lien.UsageRow, by []string, byPeriod bool, p int32) Table {
	var t Table
	if byPeriod {
		t.Headers = append(t.Headers, "Period")
	}
	for _, k := range by {
		t.Headers = append(t.Headers, strings.ToUpper(k[:1])+k[1:])
	}
	// Rows a peer reported (where grants of this bank were spent) say
	// where; this bank's own are "here".
	atPeers := slices.ContainsFunc(rows, func(r lien.UsageRow) bool { return r.Peer != "" })
	if atPeers {
		t.Headers = append(t.Headers, "At")
	}
	t.Headers = append(t.Headers, "Jobs", "Charges", "Charged", "Refunded", "Net")
	for _, r := range rows {
		var cells []string
		if byPeriod {
			cells = append(cells, r.Period.Format("2006-01-02"))
		}
		for _, k := range by {
			cells = append(cells, map[string]string{"project": r.Project, "user": r.User, "machine": r.Machine}[k])
		}
		if atPeers {
			cells = append(cells, cmp.Or(r.Peer, "here"))
		}
		t.Add(append(cells, strconv.Itoa(r.Jobs), strconv.Itoa(r.Charges), Amount(r.Charged, p), Amount(r.Refunded, p), Amount(r.Net, p))...)
	}
	return t
}
