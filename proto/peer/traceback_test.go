package peer_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

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
	first, err := f.peers.BeginOnce(ctx, req, "central", peer.OpLien, job, job.Amount)
	if err != nil || first.State != peer.StatePending {
		t.Fatalf("begin: %+v %v", first, err)
	}
	settled, err := f.peers.Settle(ctx, first.ID, peer.StateDone, json.RawMessage(`{}`))
	if err != nil || settled.State != peer.StateDone {
		t.Fatalf("settle: %+v %v", settled, err)
	}
	n := f.JournalLen()
	job.Amount = ledgertest.Dec(t, "12")
	again, err := f.peers.BeginOnce(ctx, req, "central", peer.OpLien, job, job.Amount)
	if err != nil || again.ID != first.ID || again.State != peer.StateDone || !again.Amount.Equal(first.Amount) {
		t.Fatalf("the request again: %+v %v; want transaction %s, done", again, err, first.ID)
	}
	if f.JournalLen() != n {
		t.Fatalf("the request again journaled %d entries", f.JournalLen()-n)
	}
	if _, err := f.peers.BeginOnce(ctx, req, "central", peer.OpCharge, job, job.Amount); !errors.Is(err, ledger.ErrRequestConflict) {
		t.Fatalf("a charge under the lien's request id: %v", err)
	}

	// An earlier ingot's record of the request's transaction.
	old, err := f.peers.BeginOnce(ctx, ledger.Request{Actor: "slurm"}, "central", peer.OpCharge, job, job.Amount)
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
	found, err := f.peers.BeginOnce(ctx, ledger.Request{Actor: "slurm", ID: "r0"}, "central", peer.OpCharge, job, job.Amount)
	if err != nil || found.ID != old.ID {
		t.Fatalf("a request an earlier ingot recorded: %+v %v; want transaction %s", found, err, old.ID)
	}
}
