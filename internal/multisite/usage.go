package multisite

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// awaitReports waits until the central bank has received from each site
// a usage report of a period that ends after drained: once the banks have
// drained, every charge at the sites is journaled, so the reports through
// that period hold them all.
func (r *run) awaitReports(drained time.Time) {
	start := time.Now()
	for {
		reports, err := untilAcked(func(ctx context.Context) ([]peer.ReceivedUsage, error) {
			return r.banks[central].admin.UsagePeers(ctx, api.UsagePeersQuery{})
		})
		if err != nil {
			r.t.Fatalf("multisite: the central bank's usage reports: %v", err)
		}
		through := map[string]bool{}
		for _, u := range reports {
			through[u.Peer] = through[u.Peer] || u.To.After(drained)
		}
		if through[siteA] && through[siteB] {
			return
		}
		if time.Since(start) > maxStall {
			r.t.Fatalf("multisite: %s after the drain, the central bank has no usage report of sitea (%v) or siteb (%v) beyond it",
				time.Since(start).Round(time.Second), through[siteA], through[siteB])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkUsage checks the usage reports the central bank received from each
// site (done: the central bank's deposits done, by transaction id;
// spent: what each site's jobs and the other site's visitors took of its
// account, which only the central bank's grants feed):
//
//   - the reports' periods follow each other, from the site's first
//     grant's on, with neither a gap (lost) nor an overlap (doubled);
//   - each is a usage transaction the site began and holds done, and
//     each such transaction is one of them;
//   - each line's grant is a deposit of the central bank's at the site,
//     done;
//   - together they say spent was spent there, to the credit, and so does
//     `ingot usage` at the central bank; what they say was refunded is
//     what the site's admin refunded.
func (r *run) checkUsage(rep *Report, done map[string]peer.Transaction, spent map[string]decimal.Decimal) {
	t := r.t
	ctx := context.Background()
	rep.Reports, rep.ReportedNet = map[string]int{}, map[string]decimal.Decimal{}
	received, err := r.banks[central].admin.UsagePeers(ctx, api.UsagePeersQuery{})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(received, func(a, b peer.ReceivedUsage) int { return a.From.Compare(b.From) })
	var rows []lien.UsageRow
	if out, err := r.remote(r.banks[central]).Run(5*time.Minute, "usage", "--json"); err != nil || json.Unmarshal([]byte(out), &rows) != nil {
		t.Errorf("central: ingot usage --json: %v\n%s", err, out)
	}
	for _, site := range sites {
		began := r.usageBegun(site)
		first := r.firstGrant(site)
		net, refunded := decimal.Zero, decimal.Zero
		var last *peer.ReceivedUsage
		for _, u := range received {
			if u.Peer != site {
				continue
			}
			rep.Reports[site]++
			switch {
			case last == nil && u.From.After(first):
				rep.Lost++
				t.Errorf("%s: its first usage report, of %s, begins after its first grant (%s)", site, u.Period, first)
			case last != nil && u.From.After(last.To):
				rep.Lost++
				t.Errorf("%s: no usage report from %s to %s", site, last.To, u.From)
			case last != nil && u.From.Before(last.To):
				rep.Doubled++
				t.Errorf("%s: usage reports %s and %s overlap", site, last.Period, u.Period)
			}
			if _, ok := began[u.Tx]; !ok {
				rep.Doubled++
				t.Errorf("%s: usage report %s (transaction %s) received, not begun there", site, u.Period, u.Tx)
			}
			delete(began, u.Tx)
			for _, l := range u.Lines {
				if g, ok := done[l.Grant]; !ok || g.Peer != site {
					t.Errorf("%s: usage report %s: allocation %d's grant %s is no deposit of the central bank's done there", site, u.Period, l.Allocation, l.Grant)
				}
				refunded = refunded.Add(l.Refunded)
			}
			net = net.Add(u.Net())
			last = &u
		}
		for id, x := range began {
			rep.Lost++
			t.Errorf("%s: usage report transaction %s (%s) not received", site, id, x.State)
		}
		rep.ReportedNet[site] = net
		if !net.Equal(spent[site]) {
			t.Errorf("%s: its usage reports say %s was spent of the central bank's grants; %s was charged there", site, net, spent[site])
		}
		if acked := r.refunded(site); !refunded.Equal(acked) {
			t.Errorf("%s: its usage reports say %s was refunded; its admin's refunds acknowledged come to %s", site, refunded, acked)
		}
		if last == nil {
			continue
		}
		usage := decimal.Zero
		for _, row := range rows {
			if row.Peer == site {
				usage = usage.Add(row.Net)
			}
		}
		if !usage.Equal(spent[site]) {
			t.Errorf("central: ingot usage says %s was spent at %s; %s was charged there", usage, site, spent[site])
		}
	}
}

// refunded is what the refunds of the site's own jobs acknowledged there
// came to, with what the other site's visitors' refunds, forwarded here,
// returned (in the site's credits).
func (r *run) refunded(site string) decimal.Decimal {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := r.visitorsRefunded[site]
	for _, ch := range r.charges {
		if ch.site == site && ch.home == "" && ch.amount.IsNegative() {
			total = total.Sub(ch.amount)
		}
	}
	return total
}

// usageBegun are the usage reports a site began to the central bank, by
// transaction id: each must be done.
func (r *run) usageBegun(site string) map[string]peer.Transaction {
	txs, err := r.banks[site].admin.PeerTransactions(context.Background(), false)
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]peer.Transaction{}
	for _, x := range txs {
		if x.Peer != central || x.Op != peer.OpUsage {
			continue
		}
		if x.State != peer.StateDone {
			r.t.Errorf("%s: usage report %s is %s: %s", site, x.ID, x.State, x.Answer)
		}
		out[x.ID] = x
	}
	return out
}

// firstGrant is when the central bank's first grant at site was journaled
// there.
func (r *run) firstGrant(site string) time.Time {
	entries, err := r.banks[site].admin.Journal(context.Background(), ledger.JournalFilter{Node: account, Kinds: []ledger.Kind{ledger.KindDeposit}})
	if err != nil {
		r.t.Fatal(err)
	}
	i := slices.IndexFunc(entries, func(e ledger.Entry) bool { return e.Actor == "client:"+central })
	if i < 0 {
		return time.Time{}
	}
	return entries[i].Time
}
