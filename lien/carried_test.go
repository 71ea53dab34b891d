package lien_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// TestAnswersCopyTheJournaledJSON: the answers of a placed lien and of
// final, incremental and lien-less charges copy the lien and the charge
// from the journal entry their call appended, and still give exactly
// what encoding/json gives for the same values, and a retry of the
// request gets the same bytes back, whether the answers are kept in the
// call or after it; an answer that journaled nothing (a lien placed again
// for the same job) encodes its lien itself.
func TestAnswersCopyTheJournaledJSON(t *testing.T) { bothAnswerWays(t, answersCopyTheJournaledJSON) }

func answersCopyTheJournaledJSON(t *testing.T, s *site) {
	s.MustDeposit("chem", "1000000", time.Time{})
	same := func(what string, r interface{ AppendJSON([]byte) ([]byte, error) }) {
		t.Helper()
		got, err := r.AppendJSON(nil)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if string(got) != string(want) {
			t.Fatalf("%s: AppendJSON gives\n%s\nencoding/json gives\n%s", what, got, want)
		}
	}
	placed, err := s.place("1", 4, 3600)
	if err != nil {
		t.Fatal(err)
	}
	if !placed.Copied() {
		t.Error("the placed lien's answer encodes the lien again")
	}
	same("placed lien", placed)

	again, err := s.place("1", 4, 3600)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Existing || again.Copied() {
		t.Errorf("placing the same lien again: existing %v, copied %v; want an existing lien encoded by itself", again.Existing, again.Copied())
	}
	same("existing lien", again)

	req := ledger.Request{Actor: "sched", ID: "place-3"}
	spec := lien.PlaceSpec{Job: job("3"), User: "amy", Request: request(2, 600)}
	first, err := s.lb.Place(req, spec)
	if err != nil {
		t.Fatal(err)
	}
	retried, err := s.lb.Place(req, spec)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := first.AppendJSON(nil)
	b, _ := retried.AppendJSON(nil)
	if !first.Copied() || retried.Copied() || string(a) != string(b) {
		t.Errorf("a retried place answers\n%s\nafter\n%s (copied %v, then %v)", b, a, first.Copied(), retried.Copied())
	}

	usage := func(seconds int64) charge.Usage {
		return charge.Usage{Resources: charge.Resources{Processors: 4}, WallclockSeconds: seconds, WallclockLimitSeconds: 3600, State: charge.Completed}
	}
	inc, err := s.lb.Charge(s.Req(), lien.ChargeSpec{Job: job("1"), Usage: usage(600), Incremental: true})
	if err != nil {
		t.Fatal(err)
	}
	final, err := s.lb.Charge(s.Req(), lien.ChargeSpec{Job: job("1"), Usage: usage(1200)})
	if err != nil {
		t.Fatal(err)
	}
	lienless, err := s.lb.Charge(s.Req(), lien.ChargeSpec{Job: job("2"), User: "amy", Usage: usage(60)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what           string
		r              lien.ChargeResult
		wantLienCopied bool
	}{{"incremental charge", inc, true}, {"final charge", final, true}, {"charge without a lien", lienless, false}} {
		chargeCopied, lienCopied := c.r.Copied()
		if !chargeCopied || lienCopied != c.wantLienCopied || (c.r.Lien != nil) != c.wantLienCopied {
			t.Errorf("%s: charge copied %v, lien copied %v (has a lien: %v)", c.what, chargeCopied, lienCopied, c.r.Lien != nil)
		}
		same(c.what, c.r)
	}
	if final.Lien.State != "settled" || inc.Lien.State != "active" {
		t.Errorf("lien states %s after the incremental charge, %s after the final one", inc.Lien.State, final.Lien.State)
	}
}
