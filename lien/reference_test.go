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

// TestAnswersKeptByReference: a placement's and a charge's answers are
// kept for retries as references to their journal entries (the quote, and
// the overran and released amounts, not the lien and charge again), and
// are handed to no Request.Answer; a retry makes them again from the
// entry: the same result, encoded to the same bytes as the first answer
// and as encoding/json encodes it. The answer about an existing lien,
// which the call did not journal, is kept whole.
func TestAnswersKeptByReference(t *testing.T) {
	bothAnswerWays(t, answersKeptByReference)
}

func answersKeptByReference(t *testing.T, s *site) {
	s.MustDeposit("chem", "1000000", time.Time{})
	var handed []byte
	place := ledger.Request{Actor: "sched", ID: "place-1", Answer: &handed}
	spec := lien.PlaceSpec{Job: job("1"), User: "amy", Request: request(4, 3600)}
	placed, err := s.lb.Place(place, spec)
	if err != nil {
		t.Fatal(err)
	}
	if handed != nil {
		t.Errorf("the ledger handed the placement's JSON %s; want none for an answer kept by reference", handed)
	}
	quote, err := placed.Quote.AppendJSON([]byte{1})
	if err != nil {
		t.Fatal(err)
	}
	if kept := s.keptAnswer(place); !bytes.Equal(kept, quote) {
		t.Errorf("the placement's answer is kept as %q; want %q", kept, quote)
	}
	sameRetries(t, "a placement", placed, func() (interface{ AppendJSON([]byte) ([]byte, error) }, bool, error) {
		r, err := s.lb.Place(place, spec)
		return r, r.Copied(), err
	})
	existing := ledger.Request{Actor: "sched", ID: "place-1-again"}
	if again, err := s.lb.Place(existing, spec); err != nil || !again.Existing {
		t.Fatalf("placing job 1 again: existing %v, %v", again.Existing, err)
	}
	if kept := s.keptAnswer(existing); len(kept) == 0 || kept[0] != '{' {
		t.Errorf("the answer about an existing lien is kept as %q; want its JSON", kept)
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
		sameRetries(t, c.what, first, func() (interface{ AppendJSON([]byte) ([]byte, error) }, bool, error) {
			r, err := s.lb.Charge(req, c.spec)
			copied, _ := r.Copied()
			return r, copied, err
		})
	}
}

// sameRetries retries a change twice, at once and once its records are in
// the file rather than the log: each time the answer must be made from its
// journal entry (not carry the entry's bytes) and encode, by its own
// encoder and by encoding/json, to the first answer's bytes.
func sameRetries(t *testing.T, what string, first interface{ AppendJSON([]byte) ([]byte, error) },
	retry func() (r interface{ AppendJSON([]byte) ([]byte, error) }, copied bool, err error)) {
	t.Helper()
	want, err := first.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if i > 0 {
			time.Sleep(50 * time.Millisecond) // a checkpoint
		}
		again, copied, err := retry()
		if err != nil {
			t.Fatalf("%s retried: %v", what, err)
		}
		if copied {
			t.Errorf("%s retried: the answer carries the journal's bytes; want it made from the entry", what)
		}
		got, err := again.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		viaJSON, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || !bytes.Equal(viaJSON, want) {
			t.Errorf("%s retried answers\n%s\n(encoding/json: %s)\nafter\n%s", what, got, viaJSON, want)
		}
	}
}

// TestPlacementCarriesItsKeptQuote: a placement whose answer is made at
// once keeps in its result the quote's JSON it kept for retries, and so
// does a retry, so that a server encoding the answer copies it: the
// answer's bytes are the same either way.
func TestPlacementCarriesItsKeptQuote(t *testing.T) {
	s := newSite(t, ledger.WithDeferredAnswers(false))
	s.MustDeposit("chem", "1000000", time.Time{})
	req := ledger.Request{Actor: "sched", ID: "place-1"}
	spec := lien.PlaceSpec{Job: job("1"), User: "amy", Request: request(4, 3600)}
	for _, what := range []string{"placed", "retried"} {
		r, err := s.lb.Place(req, spec)
		if err != nil {
			t.Fatal(err)
		}
		if !r.QuoteCopied() {
			t.Errorf("%s: the answer encodes its quote again", what)
		}
		got, err := r.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if want, err := json.Marshal(r); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: AppendJSON gives\n%s\nencoding/json gives\n%s (%v)", what, got, want, err)
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

// TestBadReferencesAreCorrupt: a kept answer that refers to no journal
// entry, to one of another kind, or holds no quote or amounts as the bank
// writes them, makes a retry fail as a corrupt bank does, and changes
// nothing.
func TestBadReferencesAreCorrupt(t *testing.T) {
	s := newSite(t)
	s.MustDeposit("chem", "1000000", time.Time{})
	place := ledger.Request{Actor: "sched", ID: "place-1"}
	placeSpec := lien.PlaceSpec{Job: job("1"), User: "amy", Request: request(4, 3600)}
	if _, err := s.lb.Place(place, placeSpec); err != nil {
		t.Fatal(err)
	}
	final := ledger.Request{Actor: "sched", ID: "final-1"}
	chargeSpec := lien.ChargeSpec{Job: job("1"), Usage: charge.Usage{Resources: charge.Resources{Processors: 4}, WallclockSeconds: 60, WallclockLimitSeconds: 3600, State: charge.Completed}}
	if _, err := s.lb.Charge(final, chargeSpec); err != nil {
		t.Fatal(err)
	}
	kept := func(req ledger.Request) (rec ledger.RequestRecord) {
		if err := s.View(func(tx ledger.Tx) (err error) {
			rec, _, err = tx.Request(ledger.RequestKey{Client: req.Actor, ID: req.ID})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	placed, charged := kept(place), kept(final)
	retryPlace := func() error { _, err := s.lb.Place(place, placeSpec); return err }
	retryCharge := func() error { _, err := s.lb.Charge(final, chargeSpec); return err }
	for _, bad := range []struct {
		what   string
		req    ledger.Request
		good   ledger.RequestRecord
		seq    uint64
		result []byte
		retry  func() error
		want   string
	}{
		{"a charge's missing entry", final, charged, charged.Seq + 1000, charged.Result, retryCharge, "does not hold"},
		{"a charge's entry that is a placement", final, charged, placed.Seq, charged.Result, retryCharge, "holds no charge"},
		{"a charge's reference without a zero byte", final, charged, charged.Seq, []byte("\x010"), retryCharge, "no two amounts"},
		{"an amount not as the bank writes it", final, charged, charged.Seq, []byte("\x010.50\x000"), retryCharge, "not an amount"},
		{"an empty amount", final, charged, charged.Seq, []byte("\x01\x000"), retryCharge, "not an amount"},
		{"a placement's entry that is a charge", place, placed, charged.Seq, placed.Result, retryPlace, "places no lien"},
		{"a quote that is no JSON", place, placed, placed.Seq, []byte("\x01{"), retryPlace, "quote of lien"},
		{"a quote not as the bank writes it", place, placed, placed.Seq, append([]byte{1, ' '}, placed.Result[1:]...), retryPlace, "not as the bank writes one"},
	} {
		rec := bad.good
		rec.Seq, rec.Result = bad.seq, bad.result
		key := ledger.RequestKey{Client: bad.req.Actor, ID: bad.req.ID}
		if err := s.Store.Update(func(tx ledger.Tx) error { return tx.PutRequest(key, rec) }); err != nil {
			t.Fatal(err)
		}
		before := s.JournalLen()
		if err := bad.retry(); !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: retry gives %v; want a corrupt bank (%q)", bad.what, err, bad.want)
		}
		if after := s.JournalLen(); after != before {
			t.Errorf("%s: the journal went from %d to %d entries", bad.what, before, after)
		}
		if err := s.Store.Update(func(tx ledger.Tx) error { return tx.PutRequest(key, bad.good) }); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzLienFromReference wants FromReference to take a kept quote only if
// it encodes again to the very bytes kept, and never to panic.
func FuzzLienFromReference(f *testing.F) {
	s := newSite(f)
	s.MustDeposit("chem", "1000000", time.Time{})
	placed := s.mustPlace("1", 4, 3600)
	quote, err := placed.Quote.AppendJSON(nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, ref := range []string{string(quote), `{}`, `{"credits":"1"}`, `{"credits":1}`, ` {}`, `null`, ``, `{"credits":"1.0","explanation":{}}`} {
		f.Add([]byte(ref))
	}
	e := ledger.Entry{Seq: 7, Kind: ledger.KindLienPlace, Lien: &placed.Lien}
	f.Fuzz(func(t *testing.T, ref []byte) {
		var r lien.LienResult
		if err := r.FromReference(e, ref); err != nil {
			return
		}
		again, err := r.Quote.AppendJSON(nil)
		if err != nil || !bytes.Equal(again, ref) {
			t.Errorf("FromReference took %q, which encodes again as %q (%v)", ref, again, err)
		}
		if r.Lien.ID != placed.Lien.ID || r.Project != placed.Project || r.Existing {
			t.Errorf("FromReference made %+v of the placement %+v", r, placed)
		}
	})
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
