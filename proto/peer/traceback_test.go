package peer_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// TestBeginOnce: a scheduler's request begins one transaction however
// often it is sent, whatever it then prices, and the retry sees the
// transaction as it is now; another operation under the request's id is
// a conflict; a request whose transaction an earlier ingot recorded (a
// record of its own) finds it too.
func TestBeginOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, _, err := f.peers.Add(ctx, f.Req(), peer.Spec{Name: "central", URL: "http://127.0.0.1:8080"}, nil); err != nil {
		t.Fatal(err)
	}
	job := peer.JobOp{Project: "chem.lab", Machine: "hpc1", JobID: "j1", Amount: ledgertest.Dec(t, "10"), Expires: time.Now().Add(time.Hour)}
	req := ledger.Request{Actor: "slurm", ID: "r1"}
	central := ledger.Home{Peer: "central", Project: "chem.lab", RateRatio: ledgertest.Dec(t, "2")}
	first, err := f.peers.BeginOnce(ctx, req, central, peer.OpLien, job, job.Amount, nil)
	if err != nil || first.State != peer.StatePending {
		t.Fatalf("begin: %+v %v", first, err)
	}
	settled, err := f.peers.Settle(ctx, first.ID, peer.StateDone, json.RawMessage(`{}`))
	if err != nil || settled.State != peer.StateDone {
		t.Fatalf("settle: %+v %v", settled, err)
	}
	n := f.JournalLen()
	job.Amount = ledgertest.Dec(t, "12")
	again, err := f.peers.BeginOnce(ctx, req, central, peer.OpLien, job, job.Amount, nil)
	if err != nil || again.ID != first.ID || again.State != peer.StateDone || !again.Amount.Equal(first.Amount) {
		t.Fatalf("the request again: %+v %v; want transaction %s, done", again, err, first.ID)
	}
	if f.JournalLen() != n {
		t.Fatalf("the request again journaled %d entries", f.JournalLen()-n)
	}
	if _, err := f.peers.BeginOnce(ctx, req, central, peer.OpCharge, job, job.Amount, nil); !errors.Is(err, ledger.ErrRequestConflict) {
		t.Fatalf("a charge under the lien's request id: %v", err)
	}

	// An earlier ingot's record of the request's transaction.
	old, err := f.peers.BeginOnce(ctx, ledger.Request{Actor: "slurm"}, central, peer.OpCharge, job, job.Amount, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := json.Marshal(old.ID)
	if _, err := ledger.Mutate(ctx, f.Ledger, f.Req(), ledger.KindRecord, nil, func(w *ledger.Writer) (struct{}, error) {
		_, err := w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: "central", Description: "request r0",
			Record: &ledger.Record{Kind: "peer.request", Key: "slurm/r0", Value: id}})
		return struct{}{}, err
	}); err != nil {
		t.Fatal(err)
	}
	found, err := f.peers.BeginOnce(ctx, ledger.Request{Actor: "slurm", ID: "r0"}, central, peer.OpCharge, job, job.Amount, nil)
	if err != nil || found.ID != old.ID {
		t.Fatalf("a request an earlier ingot recorded: %+v %v; want transaction %s", found, err, old.ID)
	}
}

// TestPendingJournaledOnce: a transaction is journaled once as it begins
// and once as it is answered (answered, no longer pending); the pending
// transactions of a bank an earlier ingot wrote (each in two records) are
// listed, answered and listed once as well.
func TestPendingJournaledOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, _, err := f.peers.Add(ctx, f.Req(), peer.Spec{Name: "central", URL: "http://127.0.0.1:8080"}, nil); err != nil {
		t.Fatal(err)
	}
	job := peer.JobOp{Project: "chem.lab", Machine: "hpc1", JobID: "j1", Amount: ledgertest.Dec(t, "10")}
	central := ledger.Home{Peer: "central", Project: "chem.lab", RateRatio: ledgertest.Dec(t, "2")}
	n := f.JournalLen()
	begun, err := f.peers.BeginOnce(ctx, ledger.Request{Actor: "slurm", ID: "r1"}, central, peer.OpCharge, job, job.Amount, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The job's first forwarded operation records its home too.
	if got := f.JournalLen() - n; got != 2 {
		t.Fatalf("a charge forwarded began in %d entries, want 2 (the transaction, the job's home)", got)
	}
	n = f.JournalLen()
	job.JobID = "j1b"
	released, err := f.peers.BeginOnce(ctx, ledger.Request{Actor: "slurm", ID: "r1b"}, central, peer.OpRelease, job, job.Amount, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.JournalLen() - n; got != 1 {
		t.Fatalf("a release forwarded began in %d entries, want 1", got)
	}

	// A transaction an earlier ingot began: its record, and the mark
	// that it is pending.
	old := peer.Transaction{ID: "tx-old", Peer: "central", Op: peer.OpCharge, Body: json.RawMessage(`{}`), Amount: job.Amount, State: peer.StatePending, Created: begun.Created}
	raw, _ := json.Marshal(old)
	if _, err := ledger.Mutate(ctx, f.Ledger, f.Req(), ledger.KindRecord, nil, func(w *ledger.Writer) (struct{}, error) {
		for _, r := range []ledger.Record{{Kind: "peer.tx", Key: old.ID, Value: raw}, {Kind: "peer.pending", Key: old.ID, Value: json.RawMessage(`true`)}} {
			if _, err := w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: "central", Record: &r}); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	ids := func(pending bool) []string {
		t.Helper()
		ts, err := f.peers.Transactions(ctx, pending)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tx := range ts {
			out = append(out, tx.ID+" "+string(tx.State))
		}
		return out
	}
	want := []string{begun.ID + " pending", released.ID + " pending", "tx-old pending"}
	if got := ids(true); !slices.Equal(got, want) {
		t.Fatalf("pending: %q, want %q", got, want)
	}
	if got := ids(false); !slices.Equal(got, want) {
		t.Fatalf("all: %q, want %q", got, want)
	}
	for _, id := range []string{begun.ID, released.ID, old.ID} {
		n := f.JournalLen()
		if s, err := f.peers.Settle(ctx, id, peer.StateDone, json.RawMessage(`{}`)); err != nil || s.State != peer.StateDone {
			t.Fatalf("settle %s: %+v %v", id, s, err)
		}
		if got := f.JournalLen() - n; got != 1 {
			t.Fatalf("%s answered in %d entries, want 1", id, got)
		}
	}
	if got := ids(true); len(got) != 0 {
		t.Fatalf("pending once answered: %q", got)
	}
	want = []string{begun.ID + " done", released.ID + " done", "tx-old done"}
	if got := ids(false); !slices.Equal(got, want) {
		t.Fatalf("all once answered: %q, want %q", got, want)
	}
}

// TestCheckAnswer: a refund of all that was left is recorded by what the
// home bank's answer says it refunded, so an answer that does not say it
// (or says less than nothing) is refused as one this bank cannot record,
// and kept out of the answers journaled with the next change, where it
// would have failed every change that took them; other answers are not
// read here.
func TestCheckAnswer(t *testing.T) {
	all := peer.Transaction{ID: "tx-1", Peer: "central", Op: peer.OpRefund, Amount: decimal.Zero}
	if err := peer.CheckAnswer(all, json.RawMessage(`{"refunded":"12.50","charges":[]}`)); err != nil {
		t.Errorf("a refund's answer: %v", err)
	}
	for _, bad := range []string{`{"refunded":"x"}`, `[]`, `{"refunded":"-1"}`, `nonsense`} {
		if err := peer.CheckAnswer(all, json.RawMessage(bad)); !errors.Is(err, peer.ErrBadAnswer) {
			t.Errorf("answer %s: %v, want ErrBadAnswer", bad, err)
		}
	}
	part := all
	part.Amount = decimal.NewFromInt(5)
	lienTx := peer.Transaction{ID: "tx-2", Peer: "central", Op: peer.OpLien, Amount: decimal.NewFromInt(5)}
	for _, x := range []peer.Transaction{part, lienTx} {
		if err := peer.CheckAnswer(x, json.RawMessage(`[]`)); err != nil {
			t.Errorf("%s of %s: %v", x.Op, x.Amount, err)
		}
	}
}
