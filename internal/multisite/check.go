package multisite

import (
	"context"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// A drain fails if the banks' pending transactions stop going
// down for maxStall: an outbox that is stuck, not one that is slow. Its
// whole is bounded by maxDrain.
const (
	maxStall = 2 * time.Minute
	maxDrain = 30 * time.Minute
)

// heal removes every link's fault, starts any bank that is not running,
// and waits until no bank has a transaction pending; it notes how many
// were pending then and how long the drain took. Every charge is
// journaled by then: it waits for each site's usage report of the
// period the drain ended in to reach the central bank (awaitReports).
// Then, so that no report is begun while the banks are compared, each
// site's server is started again reporting daily (a change of period
// across a restart: its next report is of the time from the end of the
// last to midnight UTC, due then), and the banks drain again.
func (r *run) heal(rep *Report) {
	t := r.t
	for _, l := range r.links {
		if err := l.proxy.Heal(); err != nil {
			t.Fatalf("link %s: %v", l, err)
		}
	}
	for _, b := range r.banks {
		if !b.srv.Running() {
			b.srv.MustStart(t)
		}
	}
	start := time.Now()
	rep.PendingHealed = r.drain()
	rep.Drain = time.Since(start)
	drained := time.Now()
	r.awaitReports(drained)
	rep.ReportsIn = time.Since(drained)
	for _, site := range sites {
		b := r.banks[site]
		if err := b.srv.Stop(); err != nil {
			t.Fatalf("stopping %s: %v\n%s", site, err, b.srv.LogTail())
		}
		b.srv.Flags = b.serveFlags(24 * time.Hour)
		b.srv.MustStart(t)
	}
	r.drain()
}

// drain waits until no bank has a transaction pending, and returns how
// many were pending when it began.
func (r *run) drain() (pendingFirst int) {
	t := r.t
	start, progress, least := time.Now(), time.Now(), -1
	for {
		var pending []peer.Transaction
		for _, name := range []string{central, siteA, siteB} {
			p, err := untilAcked(func(ctx context.Context) ([]peer.Transaction, error) {
				return r.banks[name].admin.PeerTransactions(ctx, true)
			})
			if err != nil {
				t.Fatalf("multisite: %s's pending transactions: %v", name, err)
			}
			pending = append(pending, p...)
		}
		if least < 0 {
			pendingFirst = len(pending)
		}
		if len(pending) == 0 {
			return pendingFirst
		}
		if least < 0 || len(pending) < least {
			least, progress = len(pending), time.Now()
		}
		if time.Since(progress) > maxStall || time.Since(start) > maxDrain {
			t.Fatalf("multisite: %d transactions still pending %s after healing (%d then), none sent for %s; the first %s to %s\n%s",
				len(pending), time.Since(start).Round(time.Second), pendingFirst, time.Since(progress).Round(time.Second),
				pending[0].ID, pending[0].Peer, r.banks[central].srv.LogTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// check checks the banks once drained (see the package's doc), stops
// their servers and audits each bank itself.
func (r *run) check(rep *Report) {
	t := r.t
	ctx := context.Background()
	rep.Operations, rep.PerSite = len(r.acked), map[string]int{}
	want, spent := map[string]decimal.Decimal{}, map[string]decimal.Decimal{}
	byTx := map[string]deposit{}
	for _, d := range r.acked {
		rep.PerSite[d.site]++
		want[d.site] = want[d.site].Add(d.amount)
		if first, ok := byTx[d.tx]; ok {
			rep.Doubled++
			t.Errorf("deposits %s and %s got one transaction %s", first.requestID, d.requestID, d.tx)
		}
		byTx[d.tx] = d
	}

	// The central bank: one transaction per acknowledged deposit, done.
	txs, err := r.banks[central].admin.PeerTransactions(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]peer.Transaction{}
	for _, x := range txs {
		d, ok := byTx[x.ID]
		switch {
		case !ok:
			rep.Doubled++
			t.Errorf("central: transaction %s (%s at %s) began by no acknowledged deposit", x.ID, x.Op, x.Peer)
		case x.Peer != d.site:
			t.Errorf("central: transaction %s is at %s, deposit %s was at %s", x.ID, x.Peer, d.requestID, d.site)
		case x.State != peer.StateDone:
			t.Errorf("central: transaction %s (deposit %s) is %s: %s", x.ID, d.requestID, x.State, x.Answer)
		default:
			done[x.ID] = x
		}
	}
	for id, d := range byTx {
		if _, ok := done[id]; !ok {
			if !containsTx(txs, id) {
				rep.Lost++
				t.Errorf("central: deposit %s at %s acknowledged as transaction %s, which it does not hold", d.requestID, d.site, id)
			}
		}
	}

	// Each site: each done transaction applied once, under its id; the
	// account holds what was granted there.
	for _, site := range sites {
		b := r.banks[site]
		entries, err := b.admin.Journal(ctx, ledger.JournalFilter{Node: account, Kinds: []ledger.Kind{ledger.KindDeposit}})
		if err != nil {
			t.Fatal(err)
		}
		applied := map[string]int{}
		for _, e := range entries {
			// The peer's client is named after the central bank.
			if e.Actor == "client:"+central {
				applied[e.RequestID]++
			}
		}
		for id, x := range done {
			if x.Peer != site {
				continue
			}
			switch n := applied[id]; {
			case n == 0:
				rep.Lost++
				t.Errorf("%s: transaction %s done at the central bank, not in the site's journal", site, id)
			case n > 1:
				rep.Doubled += n - 1
				t.Errorf("%s: transaction %s applied %d times", site, id, n)
			}
		}
		for id, n := range applied {
			if x, ok := done[id]; !ok || x.Peer != site {
				rep.Doubled += n
				t.Errorf("%s: the central bank's deposit %s is no transaction of it done here", site, id)
			}
		}
		spent[site] = r.checkCharges(rep, site).Add(r.checkTraceback(rep, other(site), site))
		nb, err := b.admin.Balance(ctx, account)
		if err != nil {
			t.Fatal(err)
		}
		if left := want[site].Sub(spent[site]); !nb.Amount.Equal(left) {
			t.Errorf("%s: %s holds %s; the deposits acknowledged for it sum to %s, the charges acknowledged there and forwarded by the other site to %s",
				site, account, nb.Amount, want[site], spent[site])
		}
	}

	r.checkUsage(rep, done, spent)
	r.reconcile(rep, want, spent)

	for _, b := range r.banks {
		if err := b.srv.Stop(); err != nil {
			t.Errorf("stopping %s: %v\n%s", b.name, err, b.srv.LogTail())
		}
		out, err := b.cli.Run(10*time.Minute, "audit", "--full")
		if err != nil || !strings.Contains(out, "audit: OK") {
			t.Errorf("%s: ingot audit --full: %v\n%s", b.name, err, out)
			continue
		}
		rep.Audits++
	}
}

func containsTx(txs []peer.Transaction, id string) bool {
	for _, x := range txs {
		if x.ID == id {
			return true
		}
	}
	return false
}
