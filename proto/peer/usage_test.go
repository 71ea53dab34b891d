package peer_test

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// TestUsageRows: what peers reported, as `ingot usage` rows and as a
// statement's spending at peers, filtered as charges are.
func TestUsageRows(t *testing.T) {
	d := func(i int64) decimal.Decimal { return decimal.NewFromInt(i) }
	day := func(name, who string, lines ...peer.UsageLine) peer.ReceivedUsage {
		p, _ := peer.ParsePeriod(name)
		return peer.ReceivedUsage{UsageReport: peer.UsageReport{Period: name, From: p.From, To: p.To, Lines: lines}, Peer: who}
	}
	chem := peer.UsageLine{Account: "chem", Allocation: 1, Sums: peer.Sums{Charges: 2, Charged: d(50), Refunded: d(10), Net: d(40)}}
	bio := peer.UsageLine{Account: "bio", Allocation: 2, Sums: peer.Sums{Charges: 1, Charged: d(5), Refunded: d(0), Net: d(5)}}
	reports := []peer.ReceivedUsage{day("2026-11-01", "siteb", chem, bio), day("2026-11-02", "siteb", chem), day("2026-11-02", "sitec", chem), day("2026-11-03", "siteb")}

	rows := peer.UsageRows(reports, lien.ChargeFilter{}, []string{"project"}, "", time.UTC)
	if len(rows) != 3 || rows[0].Project != "chem" || rows[0].Peer != "siteb" || !rows[0].Net.Equal(d(80)) || rows[0].Charges != 4 {
		t.Fatalf("by project: %+v", rows)
	}
	if rows := peer.UsageRows(reports, lien.ChargeFilter{Since: reports[1].From}, nil, "day", time.UTC); len(rows) != 2 || !rows[0].Net.Equal(d(40)) {
		t.Fatalf("by day since the 2nd: %+v", rows)
	}
	for name, f := range map[string]lien.ChargeFilter{"a user": {User: "amy"}, "a machine": {Machine: "hpc1"}, "a project below": {Node: "chem.lab1"}, "after": {Since: reports[3].To}} {
		if rows := peer.UsageRows(reports, f, []string{"project"}, "", time.UTC); len(rows) != 0 {
			t.Errorf("%s: %+v", name, rows)
		}
	}
	spent := peer.SpentOf(reports, "chem")
	if len(spent) != 2 || spent[0].Peer != "siteb" || spent[0].Reports != 2 || !spent[0].Net.Equal(d(80)) || spent[1].Peer != "sitec" || spent[1].Reports != 1 {
		t.Fatalf("spent of chem: %+v", spent)
	}
	if kept := peer.Keep(reports, func(l peer.UsageLine) bool { return l.Account == "bio" }); len(kept) != 1 || len(kept[0].Lines) != 1 || len(reports[0].Lines) != 2 {
		t.Fatalf("keep bio: %+v; the reports themselves: %+v", kept, reports[0])
	}
}
