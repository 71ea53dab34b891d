package multisite

import (
	"context"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// The visitors' projects: at each site, visit.OTHER is homed at the other
// site's account, at a rate ratio (the home bank's credits for one of
// the site's). While the home bank is away, the site accepts a few jobs:
// its peer record of the other site accepts up to peerCreditLine of its
// own credits, and the project's own credit line (creditLine, in the home
// bank's credits) narrows that at sitea (ratio 1.5: 15 of its credits are
// 22.5 at home), not at siteb (0.5: 7.5).
var ratios = map[string]string{siteA: "1.5", siteB: "0.5"}

const (
	creditLine     = "20"
	peerCreditLine = "15"
)

// visitors is the project at site whose jobs are charged to the other
// site.
func visitors(site string) string { return "visit." + other(site) }

// homeVisitors makes the visitors' project of a site, homed at the other
// site's account, and sets the site's away policy for the other site,
// with the commands of docs/multi-site.md.
func (r *run) homeVisitors(b *bank) {
	b.cli.Must(r.t, "account", "create", "visit")
	b.cli.Must(r.t, "project", "create", visitors(b.name), "--home", other(b.name)+":"+account,
		"--rate-ratio", ratios[b.name], "--credit-line", creditLine)
	b.cli.Must(r.t, "peer", "modify", other(b.name), "--when-away", "accept", "--credit-line", peerCreditLine, "--server-key", b.serverKey)
}

// checkTraceback checks the jobs of visitor's visitors, forwarded to home:
// every transaction visitor began with home answered (done or refused);
// as many charges and refunds done as visitor acknowledged (fewer: lost;
// more: doubled); each done transaction applied once at home under its
// id, by visitor's peer client, and nothing else of it; the charges and
// refunds home applied the figures visitor sent. It returns what they
// took from home's account, net.
func (r *run) checkTraceback(rep *Report, visitor, home string) decimal.Decimal {
	t := r.t
	ctx := context.Background()
	txs, err := r.banks[visitor].admin.PeerTransactions(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	done, withdrawn := map[string]peer.Transaction{}, map[string]peer.Transaction{}
	charges, refunds, sent, returned := 0, 0, decimal.Zero, decimal.Zero
	for _, x := range txs {
		if x.Peer != home {
			continue
		}
		switch x.State {
		case peer.StateDone:
			done[x.ID] = x
			switch x.Op {
			case peer.OpCharge:
				charges++
				sent = sent.Add(x.Amount)
			case peer.OpRefund:
				refunds++
				returned = returned.Add(x.Amount)
			}
			rep.Forwarded++
		case peer.StateRefused:
			if x.NotSent {
				rep.NotSent++
			} else {
				rep.ForwardRefused++
			}
		case peer.StateWithdrawn:
			rep.Withdrawn++
			withdrawn[x.ID] = x
		default:
			t.Errorf("%s: %s of a visitor's job to %s (transaction %s) is %s", visitor, x.Op, home, x.ID, x.State)
		}
	}
	acked, refundsAcked := 0, 0
	for _, ch := range r.charges {
		switch {
		case ch.site != visitor || ch.home != home:
		case ch.amount.IsNegative():
			refundsAcked++
		default:
			acked++
		}
	}
	rep.VisitorCharges += acked
	rep.VisitorRefunds += refundsAcked
	for _, c := range []struct {
		what      string
		done, ack int
	}{{"charges", charges, acked}, {"refunds", refunds, refundsAcked}} {
		switch {
		case c.done < c.ack:
			rep.Lost += c.ack - c.done
			t.Errorf("%s: %d visitors' %s acknowledged, %d forwarded to %s and done", visitor, c.ack, c.what, c.done, home)
		case c.done > c.ack:
			rep.Doubled += c.done - c.ack
			t.Errorf("%s: %d visitors' %s acknowledged, %d forwarded to %s and done", visitor, c.ack, c.what, c.done, home)
		}
	}

	entries, err := r.banks[home].admin.Journal(ctx, ledger.JournalFilter{Node: account,
		Kinds: []ledger.Kind{ledger.KindLienPlace, ledger.KindCharge, ledger.KindLienRelease, ledger.KindRefund}})
	if err != nil {
		t.Fatal(err)
	}
	applied, took := map[string]int{}, decimal.Zero
	for _, e := range entries {
		if e.Actor != "client:"+visitor {
			continue
		}
		applied[e.RequestID]++
		switch {
		case e.Kind == ledger.KindRefund:
			for _, d := range e.Deltas {
				took = took.Sub(d.Amount)
			}
		case e.Charge != nil:
			took = took.Add(e.Charge.Amount)
		}
	}
	for id, x := range done {
		switch n := applied[id]; {
		case x.Op == peer.OpWithdraw && n <= 1:
			// It released the lien it withdrew if that was placed here.
		case n == 0:
			rep.Lost++
			t.Errorf("%s: %s %s of %s's visitor done there, not in the journal", home, x.Op, id, visitor)
		case n > 1:
			rep.Doubled += n - 1
			t.Errorf("%s: %s %s of %s's visitor applied %d times", home, x.Op, id, visitor, n)
		}
	}
	all := map[string]peer.Transaction{}
	for _, x := range txs {
		all[x.ID] = x
	}
	for id, n := range applied {
		if x, ok := withdrawn[id]; ok && n == 1 && applied[x.Withdrawal] == 1 {
			continue // placed here, its answer lost, then released by its withdrawal
		}
		if _, ok := done[id]; !ok {
			rep.Doubled += n
			x := all[id]
			t.Errorf("%s: %s's change %s applied here is no transaction of it done there (%s %s, answered %s: %s)",
				home, visitor, id, x.Op, x.State, x.Answered, x.Answer)
		}
	}
	r.mu.Lock()
	r.visitorsRefunded[home] = returned
	r.mu.Unlock()
	if sent = sent.Sub(returned); !took.Equal(sent) {
		t.Errorf("%s: visitors' charges of %s less their refunds took %s; %s sent %s", home, visitor, took, visitor, sent)
	}
	return took
}
