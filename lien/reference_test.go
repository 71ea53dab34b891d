package lien_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/internal/jsonbuf"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// TestChargeAnswersKeptByReference: a charge's answer is kept for retries
// as a reference to its journal entry (its overran and released amounts,
// not its charge and lien again), and is handed to no Request.Answer; a
// retry makes it again from the entry: the same result, encoded to the
// same bytes as the first answer and as encoding/json encodes it. A
// place's answer, which holds a quote the entry does not, is kept whole.
func TestChargeAnswersKeptByReference(t *testing.T) {
	bothAnswerWays(t, chargeAnswersKeptByReference)
}

func chargeAnswersKeptByReference(t *testing.T, s *site) {
	s.MustDeposit("chem", "1000000", time.Time{})
	place := ledger.Request{Actor: "sched", ID: "place-1"}
	if _, err := s.lb.Place(place, lien.PlaceSpec{Job: job("1"), User: "amy", Request: request(4, 3600)}); err != nil {
		t.Fatal(err)
	}
	if kept := s.keptAnswer(place); len(kept) == 0 || kept[0] != '{' {
		t.Errorf("the place's answer is kept as %q; want its JSON", kept)
	}
	usage := func(seconds int64) charge.Usage {
		return charge.Usage{Resources: charge.Resources{Processors: 4}, WallclockSeconds: seconds, WallclockLimitSeconds: 3600, State: charge.Completed}
	}
	for _, c := range []struct {
		what string
		id   string
		spec lien.ChargeSpec
	}{
		{"an incremental charge", "inc-1", lien.ChargeSpec{Job: job("1"), Usage: usage(600), Incremental: true}},
		{"a final charge", "final-1", lien.ChargeSpec{Job: job("1"), Usage: usage(1200)}},
		{"a charge without a lien", "charge-2", lien.ChargeSpec{Job: job("2"), User: "amy", Usage: usage(60)}},
	} {
		var handed []byte
		req := ledger.Request{Actor: "sched", ID: c.id, Answer: &handed}
		first, err := s.lb.Charge(req, c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if handed != nil {
			t.Errorf("%s: the ledger handed the answer's JSON %s; want none for an answer kept by reference", c.what, handed)
		}
		kept := s.keptAnswer(req)
		want := append(append(append([]byte{1}, jsonbuf.AppendDecimal(nil, first.Overran)...), 0), jsonbuf.AppendDecimal(nil, first.Released)...)
		if !bytes.Equal(kept, want) {
			t.Errorf("%s: the answer is kept as %q; want %q", c.what, kept, want)
		}
		firstJSON, err := first.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, retried := range []bool{false, true} {
			again, err := s.lb.Charge(req, c.spec)
			if err != nil {
				t.Fatalf("%s retried: %v", c.what, err)
			}
			if copied, _ := again.Copied(); copied {
				t.Errorf("%s retried: the answer carries the journal's bytes; want it made from the entry", c.what)
			}
			got, err := again.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			viaJSON, err := json.Marshal(again)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, firstJSON) || !bytes.Equal(viaJSON, firstJSON) {
				t.Errorf("%s retried answers\n%s\n(encoding/json: %s)\nafter\n%s", c.what, got, viaJSON, firstJSON)
			}
			if retried {
				break
			}
			time.Sleep(50 * time.Millisecond) // the record and the entry in the file, not the log
		}
	}
}

// keptAnswer is what the bank keeps of the answer to req.
func (s *site) keptAnswer(req ledger.Request) []byte {
	s.t.Helper()
	var kept []byte
	err := s.View(func(tx ledger.Tx) error {
		rec, ok, err := tx.Request(ledger.RequestKey{Client: req.Actor, ID: req.ID})
		if !ok && err == nil {
			err = errors.New("no record")
		}
		kept = rec.Result
		return err
	})
	if err != nil {
		s.t.Fatalf("request %s: %v", req.ID, err)
	}
	return kept
}

// TestBadChargeReferencesAreCorrupt: a kept charge answer that refers to
// no journal entry, to one that is no charge, or holds no amounts as the
// bank writes them, makes a retry fail as a corrupt bank does, and
// changes nothing.
func TestBadChargeReferencesAreCorrupt(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "1000000", time.Time{})
	place := ledger.Request{Actor: "sched", ID: "place-1"}
	if _, err := s.lb.Place(place, lien.PlaceSpec{Job: job("1"), User: "amy", Request: request(4, 3600)}); err != nil {
		t.Fatal(err)
	}
	req := ledger.Request{Actor: "sched", ID: "final-1"}
	spec := lien.ChargeSpec{Job: job("1"), Usage: charge.Usage{Resources: charge.Resources{Processors: 4}, WallclockSeconds: 60, WallclockLimitSeconds: 3600, State: charge.Completed}}
	if _, err := s.lb.Charge(req, spec); err != nil {
		t.Fatal(err)
	}
	key := ledger.RequestKey{Client: req.Actor, ID: req.ID}
	var good ledger.RequestRecord
	if err := s.View(func(tx ledger.Tx) (err error) { good, _, err = tx.Request(key); return err }); err != nil {
		t.Fatal(err)
	}
	var placeSeq uint64
	if err := s.View(func(tx ledger.Tx) error {
		rec, _, err := tx.Request(ledger.RequestKey{Client: place.Actor, ID: place.ID})
		placeSeq = rec.Seq
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		what   string
		seq    uint64
		result []byte
		want   string
	}{
		{"a missing entry", good.Seq + 1000, good.Result, "does not hold"},
		{"an entry that is no charge", placeSeq, good.Result, "holds no charge"},
		{"no zero byte", good.Seq, []byte("\x010"), "no two amounts"},
		{"an amount not as the bank writes it", good.Seq, []byte("\x010.50\x000"), "not an amount"},
		{"an empty amount", good.Seq, []byte("\x01\x000"), "not an amount"},
	} {
		rec := good
		rec.Seq, rec.Result = bad.seq, bad.result
		if err := s.Store.Update(func(tx ledger.Tx) error { return tx.PutRequest(key, rec) }); err != nil {
			t.Fatal(err)
		}
		before := s.JournalLen()
		_, err := s.lb.Charge(req, spec)
		if !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: retry gives %v; want a corrupt bank (%q)", bad.what, err, bad.want)
		}
		if after := s.JournalLen(); after != before {
			t.Errorf("%s: the journal went from %d to %d entries", bad.what, before, after)
		}
	}
}

// FuzzChargeFromReference wants FromReference to take a kept reference
// only if its amounts encode again to the very bytes kept, and never to
// panic.
func FuzzChargeFromReference(f *testing.F) {
	for _, ref := range []string{"0\x000", "1.5\x0012.25", "0\x00", "\x000", "0", "", "1e3\x000", "-0\x000", "0.50\x000", "1\x002\x003"} {
		f.Add([]byte(ref))
	}
	e := ledger.Entry{Seq: 7, Kind: ledger.KindCharge, Charge: &ledger.Charge{ID: 3, Amount: decimal.NewFromInt(5)}}
	f.Fuzz(func(t *testing.T, ref []byte) {
		var r lien.ChargeResult
		if err := r.FromReference(e, ref); err != nil {
			return
		}
		again := append(append(jsonbuf.AppendDecimal(nil, r.Overran), 0), jsonbuf.AppendDecimal(nil, r.Released)...)
		if !bytes.Equal(again, ref) {
			t.Errorf("FromReference took %q, which encodes again as %q", ref, again)
		}
		if r.Charge.ID != 3 {
			t.Errorf("FromReference made charge %d of entry 7's charge 3", r.Charge.ID)
		}
	})
}
