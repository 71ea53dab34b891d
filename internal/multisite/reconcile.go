package multisite

import (
	"encoding/json"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/ingotproc"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// remote is the command line of bank b through its server, as its
// admin: the README's way of running peer reconcile and peer statement.
func (r *run) remote(b *bank) ingotproc.Command {
	return ingotproc.Command{Bin: r.cfg.Binary, Global: []string{"--server", b.srv.URL, "--key-file", b.adminKey}}
}

// months are the UTC months the run's transactions began in, as peer
// statement's --period names them.
func (r *run) months() []string {
	var out []string
	began, now := r.began.UTC(), time.Now().UTC()
	for m := time.Date(began.Year(), began.Month(), 1, 0, 0, 0, 0, time.UTC); !m.After(now); m = m.AddDate(0, 1, 0) {
		out = append(out, m.Format("2006-01"))
	}
	return out
}

// reconcile runs `ingot peer reconcile` on both banks of each link,
// which must find no difference (between the central bank and a site, at
// least the deposits acknowledged and the usage reports must agree), and
// `ingot peer statement` on both ends of the central bank's links for
// every month of the run, with nothing pending or refused: the central
// bank's deposits sent to each site, the site's received from it, and
// what was acknowledged for the site (granted) must be one sum; the
// site's usage reports sent, the central bank's received, and what was
// charged there (spent) another. So the credits are conserved as the
// statements say: what the central bank granted a site less what the
// site reported spending is what the site's account holds (check).
func (r *run) reconcile(rep *Report, granted, spent map[string]decimal.Decimal) {
	r.reconcileOne(rep, siteA, siteB, 0)
	r.reconcileOne(rep, siteB, siteA, 0)
	for _, site := range sites {
		r.reconcileOne(rep, central, site, rep.PerSite[site]+rep.Reports[site])
		r.reconcileOne(rep, site, central, rep.PerSite[site]+rep.Reports[site])
		grantsSent, grantsReceived, usageSent, usageReceived := decimal.Zero, decimal.Zero, decimal.Zero, decimal.Zero
		for _, m := range r.months() {
			var here, there peer.Statement
			r.statement(r.banks[central], site, m, &here)
			r.statement(r.banks[site], central, m, &there)
			grantsSent, grantsReceived = grantsSent.Add(here.Sent), grantsReceived.Add(there.Received)
			usageReceived, usageSent = usageReceived.Add(here.Received), usageSent.Add(there.Sent)
		}
		if !grantsSent.Equal(granted[site]) || !grantsReceived.Equal(granted[site]) {
			r.t.Errorf("peer statement: central sent %s to %s, %s received %s from central; the deposits acknowledged sum to %s",
				grantsSent, site, site, grantsReceived, granted[site])
			continue
		}
		if !usageReceived.Equal(spent[site]) || !usageSent.Equal(spent[site]) {
			r.t.Errorf("peer statement: %s sent usage of %s to central, central received %s from %s; %s was charged there",
				site, usageSent, usageReceived, site, spent[site])
			continue
		}
		rep.Statements++
	}
}

// statement reads b's `ingot peer statement` with other for month, which
// must have nothing pending or refused.
func (r *run) statement(b *bank, other, month string, st *peer.Statement) {
	out, err := r.remote(b).Run(5*time.Minute, "peer", "statement", other, "--period", month, "--json")
	if err == nil {
		err = json.Unmarshal([]byte(out), st)
	}
	if err != nil {
		r.t.Errorf("%s: ingot peer statement %s --period %s: %v\n%s", b.name, other, month, err, out)
		return
	}
	for _, l := range st.Lines {
		if l.Pending > 0 || l.Refused > 0 {
			r.t.Errorf("%s: ingot peer statement %s --period %s: %s %s: %d pending, %d refused", b.name, other, month, l.Direction, l.Op, l.Pending, l.Refused)
		}
	}
}

// reconcileOne runs `ingot peer reconcile OTHER` at bank name, through its
// server: no difference, and at least least transactions agreeing.
func (r *run) reconcileOne(rep *Report, name, other string, least int) {
	b := r.banks[name]
	out, err := r.remote(b).Run(5*time.Minute, "peer", "reconcile", other, "--json")
	var rec peer.Reconciliation
	if jerr := json.Unmarshal([]byte(out), &rec); err != nil || jerr != nil {
		r.t.Errorf("%s: ingot peer reconcile %s: %v\n%s", name, other, err, out)
		return
	}
	if len(rec.Differences) > 0 || rec.Matched < least {
		r.t.Errorf("%s: ingot peer reconcile %s: %d agree, %d differ (%+v); want at least %d agreeing",
			name, other, rec.Matched, len(rec.Differences), rec.Differences[:min(3, len(rec.Differences))], least)
		return
	}
	rep.Reconciled++
	rep.Agreed += rec.Matched
}
