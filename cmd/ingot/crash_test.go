package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/client"
)

// TestServerCrash kills `ingot serve`, on a real bbolt bank under load from
// eight concurrent API clients (lien places, charges, deposits), with
// SIGKILL twenty times, each time once a random number of answers has come
// back. After each kill, with the server gone, the file is checked: `ingot
// audit` passes, and every acknowledged request (a 200 received) is in the
// journal once, with its amounts. After each restart, through the server:
// resending acknowledged requests with their ids returns their first
// answers and moves no balance; the requests the kill cut off are resent
// and apply once. At the end the server is stopped with SIGTERM, the file
// is checked again, and chem's balance must be what the acknowledged
// requests add up to.
func TestServerCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test kills the server twenty times; skipped with -short")
	}
	const rounds, workers = 20, 8
	bank := newServedBank(t)
	ws := make([]*crashWorker, workers)
	for g := range ws {
		ws[g] = &crashWorker{g: g}
	}
	start := time.Now()
	for round := range rounds {
		srv := startServer(t, bank.db)
		for _, w := range ws {
			w.connect(srv, bank)
		}
		resendAcknowledged(t, ws)
		// Kill once a random number of answers has come back, while the
		// other workers' requests are in flight.
		acks := 10 + rand.IntN(150)
		var count atomic.Int64
		reached := make(chan struct{})
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Go(func() {
				w.run(func() {
					if count.Add(1) == int64(acks) {
						close(reached)
					}
				})
			})
		}
		select {
		case <-reached:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: %d of %d answers within 30s\n%s", round, count.Load(), acks, srv.logTail())
		}
		srv.kill()
		wg.Wait()
		checkFile(t, bank, ws, fmt.Sprintf("round %d", round))
	}
	killed := time.Since(start)

	srv := startServer(t, bank.db)
	for _, w := range ws {
		w.connect(srv, bank)
		w.resendPending()
	}
	srv.stop()
	checkFile(t, bank, ws, "after the final stop")
	checkTotals(t, bank, ws)
	total, resent := 0, 0
	for _, w := range ws {
		total, resent = total+len(w.acked), resent+w.resent
	}
	t.Logf("%d acknowledged requests survived %d SIGKILLs (%s); %d requests cut off by a kill were resent", total, rounds, killed.Round(time.Millisecond), resent)
}

// crashOp is one request a worker makes: a change with its request id.
type crashOp struct {
	id      string
	deposit *api.DepositRequest
	lien    *api.LienRequest
	charge  *api.ChargeRequest
}

// ack is an acknowledged request and its answer, as decoded and in JSON.
type ack struct {
	op     crashOp
	answer any
	json   []byte
}

// crashWorker is one client of the bank: a scheduler running jobs one after
// another (a lien, then a final charge), and after every third job an
// admin's deposit. It carries its state across the kills.
type crashWorker struct {
	g         int
	job, step int      // the next request: step 0 lien, 1 charge, 2 deposit of job
	pending   *crashOp // a request whose answer did not come (resent first)
	resent    int      // how many pending requests were resent
	acked     []ack
	refused   error // an error from the bank: a failure of the test
	admin     *client.Client
	scheduler *client.Client
}

func (w *crashWorker) connect(srv *serverProcess, bank *servedBank) {
	w.admin, w.scheduler = srv.client(bank.admin), srv.client(bank.scheduler)
}

// next is the request after the last acknowledged one.
func (w *crashWorker) next() crashOp {
	if w.pending != nil {
		return *w.pending
	}
	jobID := fmt.Sprintf("w%d-%d", w.g, w.job)
	op := crashOp{id: fmt.Sprintf("%s-%d", jobID, w.step)}
	place, charge := cycleOf(jobID)
	switch w.step {
	case 0:
		op.lien = &place
	case 1:
		op.charge = &charge
	default:
		op.deposit = &api.DepositRequest{Account: "chem", Amount: decimal.New(int64(100+w.job), -2)}
	}
	return op
}

// advance moves past an acknowledged request.
func (w *crashWorker) advance() {
	w.step++
	if w.step == 3 || w.step == 2 && w.job%3 != 0 {
		w.job, w.step = w.job+1, 0
	}
}

// send sends op and returns the answer.
func (w *crashWorker) send(op crashOp) (any, error) {
	ctx := context.Background()
	switch {
	case op.lien != nil:
		return w.scheduler.PlaceLien(ctx, op.id, *op.lien)
	case op.charge != nil:
		return w.scheduler.Charge(ctx, op.id, *op.charge)
	}
	return w.admin.Deposit(ctx, op.id, *op.deposit)
}

// sendNext sends the next request. It returns false when the request got no
// answer (it stays pending) or was refused (w.refused).
func (w *crashWorker) sendNext() bool {
	op := w.next()
	answer, err := w.send(op)
	if _, refused := errors.AsType[*api.Error](err); refused {
		w.refused = fmt.Errorf("worker %d, request %s: %w", w.g, op.id, err)
		return false
	}
	if err != nil {
		w.pending = &op
		return false
	}
	raw, err := json.Marshal(answer)
	if err != nil {
		w.refused = err
		return false
	}
	w.pending = nil
	w.acked = append(w.acked, ack{op: op, answer: answer, json: raw})
	w.advance()
	return true
}

// run makes requests until one gets no answer, calling acked after each
// answer.
func (w *crashWorker) run(acked func()) {
	for w.sendNext() {
		acked()
	}
}

// resendPending resends the request the last kill cut off, if any.
func (w *crashWorker) resendPending() {
	if w.pending != nil {
		w.resent++
		w.sendNext()
	}
}

// resendAcknowledged resends, through the restarted server, each worker's
// last acknowledged request and one earlier: each must get its first
// answer, and the balance must not move. Then the requests cut off by the
// kill are resent.
func resendAcknowledged(t *testing.T, ws []*crashWorker) {
	t.Helper()
	ctx := context.Background()
	before, err := ws[0].admin.Balance(ctx, "chem")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if len(w.acked) == 0 {
			continue
		}
		for _, a := range []ack{w.acked[len(w.acked)-1], w.acked[rand.IntN(len(w.acked))]} {
			answer, err := w.send(a.op)
			if err != nil {
				t.Fatalf("resending acknowledged request %s: %v", a.op.id, err)
			}
			if raw, _ := json.Marshal(answer); !bytes.Equal(raw, a.json) {
				t.Fatalf("resent request %s answered\n%s\nits first answer was\n%s", a.op.id, raw, a.json)
			}
		}
	}
	after, err := ws[0].admin.Balance(ctx, "chem")
	if err != nil {
		t.Fatal(err)
	}
	if !after.Amount.Equal(before.Amount) || !after.Reserved.Equal(before.Reserved) {
		t.Fatalf("resent requests moved chem from %s (reserved %s) to %s (reserved %s)", before.Amount, before.Reserved, after.Amount, after.Reserved)
	}
	for _, w := range ws {
		w.resendPending()
	}
}

// checkFile checks the bank file while no server runs: the audit passes,
// no request of an API client (each of which writes one entry) is in the
// journal twice, and every acknowledged request is there with the amounts
// of its answer.
func checkFile(t *testing.T, bank *servedBank, ws []*crashWorker, when string) {
	t.Helper()
	if out, code := bank.run("audit"); code != exitOK {
		t.Fatalf("%s: ingot audit exited %d:\n%s", when, code, out)
	}
	var entries []ledger.Entry
	bank.json(&entries, "journal")
	byRequest := map[string]ledger.Entry{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Actor, "client:") {
			continue // set-up; a command may write several entries
		}
		key := e.Actor + " " + e.RequestID
		if first, twice := byRequest[key]; twice {
			t.Fatalf("%s: request %s applied twice: entries %d and %d", when, key, first.Seq, e.Seq)
		}
		byRequest[key] = e
	}
	for _, w := range ws {
		if w.refused != nil {
			t.Fatalf("%s: %v", when, w.refused)
		}
		for _, a := range w.acked {
			if err := a.foundIn(byRequest); err != nil {
				t.Fatalf("%s: acknowledged request %s: %v", when, a.op.id, err)
			}
		}
	}
}

// foundIn checks that the journal holds the acknowledged change, as its
// answer described it.
func (a ack) foundIn(byRequest map[string]ledger.Entry) error {
	actor := "client:slurm"
	if a.op.deposit != nil {
		actor = "client:root"
	}
	e, ok := byRequest[actor+" "+a.op.id]
	if !ok {
		return errors.New("not in the journal")
	}
	switch r := a.answer.(type) {
	case ledger.Receipt:
		if e.Kind != ledger.KindDeposit || e.Seq != r.Seq || len(e.Deltas) != 1 || !e.Deltas[0].Amount.Equal(a.op.deposit.Amount) {
			return fmt.Errorf("answered entry %d, deposit %s; journal has %+v", r.Seq, a.op.deposit.Amount, e)
		}
	case lien.LienResult:
		if e.Kind != ledger.KindLienPlace || e.Lien == nil || e.Lien.ID != r.Lien.ID || e.Lien.JobID != a.op.lien.ID || !e.Lien.Amount.Equal(r.Lien.Amount) {
			return fmt.Errorf("answered lien %d of %s; journal has %+v", r.Lien.ID, r.Lien.Amount, e)
		}
	case lien.ChargeResult:
		if e.Kind != ledger.KindCharge || e.Charge == nil || e.Charge.ID != r.Charge.ID || e.Charge.JobID != a.op.charge.ID || !e.Charge.Amount.Equal(r.Charge.Amount) || !e.Charge.Final {
			return fmt.Errorf("answered charge %d of %s; journal has %+v", r.Charge.ID, r.Charge.Amount, e)
		}
	default:
		return fmt.Errorf("unexpected answer %T", a.answer)
	}
	return nil
}

// checkTotals checks, once no request is left pending, that chem holds what
// the acknowledged requests add up to: its deposit, plus the deposits, less
// the charges, with the liens of the jobs not yet charged reserved. A
// request applied twice, even under another id, would show here.
func checkTotals(t *testing.T, bank *servedBank, ws []*crashWorker) {
	t.Helper()
	amount := decimal.RequireFromString("1000000000000")
	held := map[string]decimal.Decimal{} // job → its lien, until charged
	for _, w := range ws {
		if w.pending != nil {
			t.Fatalf("request %s is still pending after the final restart", w.pending.id)
		}
		for _, a := range w.acked {
			switch r := a.answer.(type) {
			case ledger.Receipt:
				amount = amount.Add(a.op.deposit.Amount)
			case lien.LienResult:
				held[a.op.lien.ID] = r.Lien.Amount
			case lien.ChargeResult:
				amount = amount.Sub(r.Charge.Amount)
				delete(held, a.op.charge.ID)
			}
		}
	}
	reserved := decimal.Zero
	for _, h := range held {
		reserved = reserved.Add(h)
	}
	var chem []ledger.NodeBalance
	bank.json(&chem, "balance", "chem")
	if len(chem) != 1 || !chem[0].Amount.Equal(amount) || !chem[0].Reserved.Equal(reserved) {
		t.Errorf("chem: %+v; the acknowledged requests add up to amount %s, reserved %s", chem, amount, reserved)
	}
}
