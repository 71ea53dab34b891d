package multisite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
)

// At each site, jobs run on machine on the account the central bank
// grants, as user, through the site's scheduler client.
const (
	machine   = "hpc"
	user      = "amy"
	scheduler = "sched"
)

// charged is a job's final charge that a site acknowledged: home names
// the other site for a visitor's job (its charge forwarded there). A
// refund of a part of a charge on a site's own account, which its admin
// gives and the site acknowledged, is one too, its amount negative.
type charged struct {
	requestID string
	site      string
	home      string
	amount    decimal.Decimal
}

// refundOneIn is how often a site's admin refunds a part of a job's
// charge on the site's account: one job in refundOneIn.
const refundOneIn = 4

// setUpJobs gives a site what its jobs need: a machine, a user of the
// account and of the visitors' project, and a scheduler client; it
// returns the client's key file.
func (r *run) setUpJobs(b *bank, keys string) string {
	t := r.t
	file := filepath.Join(keys, b.name+"-"+scheduler+".key")
	b.cli.Must(t, "machine", "add", machine, "--cores", "64")
	b.cli.Must(t, "user", "add", user, "--member", account, "--member", visitors(b.name), "--default-project", account)
	b.cli.Must(t, "client", "add", scheduler, "--role", "scheduler", "--scope", machine, "--key-out", file, "--server-key", b.serverKey)
	return file
}

// runJobs runs jobs at a site, one at a time, until stop, on its account
// and its visitors' project in turn: a lien, then a final charge, each
// sent until the site acknowledges it (a visitor's forwarded to its home
// bank, the other site, whose answer the site gives); the site's admin
// refunds a part of a charge on its account now and then (refundOneIn).
// A lien refused for want of credits (the grants not there yet) is a job
// not run.
func (r *run) runJobs(site string, rng *rand.Rand, stop <-chan struct{}) {
	b := r.banks[site]
	key, err := readKey(b.schedKey)
	if err != nil {
		r.t.Error(err)
		return
	}
	c, err := client.New(b.srv.URL, key, client.WithHTTPClient(&http.Client{Timeout: 15 * time.Second}), client.WithRetries(1, 0))
	if err != nil {
		r.t.Error(err)
		return
	}
	for i := range maxOps {
		select {
		case <-stop:
			return
		default:
		}
		procs, used := 1+rng.Int64N(4), 1+rng.Int64N(120)
		job := lien.Job{Machine: machine, ID: fmt.Sprintf("%s-%d", site, i)}
		project, home := account, ""
		if i%2 == 1 {
			project, home = visitors(site), other(site)
		}
		place := api.LienRequest{Job: job, User: user, Project: project,
			Request: charge.Request{Resources: charge.Resources{Processors: procs}, WallclockLimitSeconds: 120}}
		lienID := client.NewRequestID()
		_, err := untilAcked(func(ctx context.Context) (lien.LienResult, error) {
			return c.PlaceLien(ctx, lienID, place)
		})
		if e, ok := errors.AsType[*api.Error](err); ok && e.Code == api.CodeInsufficientFunds {
			r.liensRefused.Add(1)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil {
			r.t.Errorf("%s: lien of job %s (request %s): %v", site, job.ID, lienID, err)
			return
		}
		final := api.ChargeRequest{Job: job, Usage: charge.Usage{Resources: charge.Resources{Processors: procs},
			WallclockSeconds: used, WallclockLimitSeconds: 120, State: charge.Completed}}
		if home != "" {
			// The site holds no lien of a visitor's job (its home bank
			// does): the charge names the user and project, as a charge
			// without a lien does.
			final.User, final.Project = user, project
		}
		ch := charged{requestID: client.NewRequestID(), site: site, home: home}
		res, err := untilAcked(func(ctx context.Context) (lien.ChargeResult, error) {
			return c.Charge(ctx, ch.requestID, final)
		})
		if err != nil {
			r.t.Errorf("%s: charge of job %s (request %s): %v", site, job.ID, ch.requestID, err)
			return
		}
		ch.amount = res.Charge.Amount
		r.mu.Lock()
		r.charges = append(r.charges, ch)
		r.mu.Unlock()
		if rng.IntN(refundOneIn) == 0 && !r.refund(b, job, home, res.Charge, rng) {
			return
		}
		time.Sleep(10*time.Millisecond + time.Duration(rng.Int64N(int64(40*time.Millisecond))))
	}
}

// refund refunds a part of a job's charge at site b, as its admin, sent
// until acknowledged; false if it was refused. A visitor's job (home is
// its home bank) has no charge at the site: it is refunded by job, and
// the refund forwarded to its home bank.
func (r *run) refund(b *bank, job lien.Job, home string, c ledger.Charge, rng *rand.Rand) bool {
	part := c.Amount.Mul(decimal.NewFromInt(1 + rng.Int64N(4))).Div(decimal.NewFromInt(4)).RoundDown(2)
	if !part.IsPositive() {
		return true
	}
	ref := charged{requestID: client.NewRequestID(), site: b.name, home: home, amount: part.Neg()}
	send := func(ctx context.Context) (any, error) {
		return b.admin.Refund(ctx, ref.requestID, api.RefundRequest{Charge: c.ID, Amount: part})
	}
	if home != "" {
		send = func(ctx context.Context) (any, error) {
			return b.admin.RefundJob(ctx, ref.requestID, lien.JobRefundSpec{Job: job, Amount: part})
		}
	}
	if _, err := untilAcked(send); err != nil {
		r.t.Errorf("%s: refund of %s of job %s (request %s): %v", b.name, part, job.ID, ref.requestID, err)
		return false
	}
	r.mu.Lock()
	r.charges = append(r.charges, ref)
	r.mu.Unlock()
	return true
}

// checkCharges checks a site's charges of its own account's jobs and the
// refunds of them: each acknowledged one in the journal once, under its
// request id, and no other charge of the scheduler's or refund of the
// admin's; no lien left active. It returns what they took, net.
func (r *run) checkCharges(rep *Report, site string) decimal.Decimal {
	t := r.t
	ctx := context.Background()
	b := r.banks[site]
	entries, err := b.admin.Journal(ctx, ledger.JournalFilter{Node: account, Kinds: []ledger.Kind{ledger.KindCharge, ledger.KindRefund}})
	if err != nil {
		t.Fatal(err)
	}
	applied := map[string]int{}
	for _, e := range entries {
		if e.Kind == ledger.KindCharge && e.Actor == "client:"+scheduler || e.Kind == ledger.KindRefund && e.Actor == "client:"+admin {
			applied[e.RequestID]++
		}
	}
	total := decimal.Zero
	acked := map[string]bool{}
	for _, ch := range r.charges {
		if ch.site != site || ch.home != "" {
			continue
		}
		if ch.amount.IsNegative() {
			rep.Refunds++
		} else {
			rep.Charges++
		}
		acked[ch.requestID] = true
		total = total.Add(ch.amount)
		switch n := applied[ch.requestID]; {
		case n == 0:
			rep.Lost++
			t.Errorf("%s: charge %s acknowledged, not in the journal", site, ch.requestID)
		case n > 1:
			rep.Doubled += n - 1
			t.Errorf("%s: charge %s applied %d times", site, ch.requestID, n)
		}
	}
	for id, n := range applied {
		if !acked[id] {
			rep.Doubled += n
			t.Errorf("%s: charge %s in the journal, acknowledged to no job", site, id)
		}
	}
	liens, err := b.admin.Liens(ctx, account, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(liens) > 0 {
		t.Errorf("%s: %d liens left active, the first of job %s", site, len(liens), liens[0].JobID)
	}
	return total
}

// readKey reads an API client's key file.
func readKey(path string) (auth.Key, error) {
	raw, err := auth.ReadSecretFile(path)
	if err != nil {
		return auth.Key{}, err
	}
	return auth.ParseKeyFile(raw)
}
