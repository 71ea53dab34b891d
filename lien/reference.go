package lien

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/internal/jsonbuf"
	"github.com/ingot-hpc/ingot/ledger"
)

// A placement's and a charge's answers are kept for retries by reference
// to their journal entries (ledger.AnswerReference), which hold the same
// lien, and charge: what a placement's answer holds besides is the quote,
// kept as its JSON (the project it fell back from is in the lien's
// detail); what a charge's holds besides is how far the charge overran
// its lien and what it released, kept as their text with a zero byte
// between. An answer about a lien the call did not journal (an existing
// one) is kept whole.

// AppendReference appends the quote, if the entry w appended last holds
// the answer's lien as the answer carries it, and keeps the quote's JSON
// for AppendJSON to copy: a server encodes the answer again to send it.
func (r *LienResult) AppendReference(dst []byte, w *ledger.Writer) ([]byte, bool) {
	lien, _ := w.Carried()
	if r.lienJSON == nil || r.Existing || !bytes.Equal(r.lienJSON, lien) {
		return dst, false
	}
	start := len(dst)
	b, err := r.Quote.AppendJSON(dst)
	if err != nil {
		return dst, false // kept whole, whose encoding reports the error
	}
	r.quoteJSON = b[start:len(b):len(b)]
	return b, true
}

// FromReference makes the answer from its placement's journal entry and
// the quote AppendReference appended. It refuses a quote not written as
// AppendJSON writes it, which would encode to other bytes than the first
// answer's.
func (r *LienResult) FromReference(e ledger.Entry, ref []byte) error {
	if e.Kind != ledger.KindLienPlace || e.Lien == nil {
		return fmt.Errorf("journal entry %d (%s) places no lien", e.Seq, e.Kind)
	}
	var quote charge.Amount
	if err := json.Unmarshal(ref, &quote); err != nil {
		return fmt.Errorf("the quote of lien %d: %w", e.Lien.ID, err)
	}
	if again, err := quote.AppendJSON(nil); err != nil || !bytes.Equal(again, ref) {
		return fmt.Errorf("the quote of lien %d is not as the bank writes one", e.Lien.ID)
	}
	d, err := DetailOf(*e.Lien)
	if err != nil {
		return err
	}
	*r = resultOf(*e.Lien, d, &quote)
	r.quoteJSON = ref[:len(ref):len(ref)]
	return nil
}

// AppendReference appends what the answer holds beyond the entry w
// appended last, if that entry holds the answer's charge and lien as the
// answer carries them.
func (r *ChargeResult) AppendReference(dst []byte, w *ledger.Writer) ([]byte, bool) {
	lien, charge := w.Carried()
	if r.chargeJSON == nil || !bytes.Equal(r.chargeJSON, charge) || (r.Lien == nil) != (r.lienJSON == nil) || !bytes.Equal(r.lienJSON, lien) {
		return dst, false
	}
	dst = jsonbuf.AppendDecimal(dst, r.Overran)
	dst = append(dst, 0)
	return jsonbuf.AppendDecimal(dst, r.Released), true
}

// FromReference makes the answer from its charge's journal entry and what
// AppendReference appended. It refuses amounts not written as
// AppendReference writes them, which would encode to other bytes than the
// first answer's.
func (r *ChargeResult) FromReference(e ledger.Entry, ref []byte) error {
	if e.Kind != ledger.KindCharge || e.Charge == nil {
		return fmt.Errorf("journal entry %d (%s) holds no charge", e.Seq, e.Kind)
	}
	overran, released, ok := bytes.Cut(ref, []byte{0})
	if !ok {
		return fmt.Errorf("the reference to charge %d holds no two amounts", e.Charge.ID)
	}
	o, err := referencedAmount(overran)
	if err != nil {
		return fmt.Errorf("the reference to charge %d: overran: %w", e.Charge.ID, err)
	}
	rel, err := referencedAmount(released)
	if err != nil {
		return fmt.Errorf("the reference to charge %d: released: %w", e.Charge.ID, err)
	}
	*r = ChargeResult{Charge: *e.Charge, Lien: e.Lien, Overran: o, Released: rel}
	return nil
}

// referencedAmount reads an amount as jsonbuf.AppendDecimal writes it.
func referencedAmount(text []byte) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(string(text))
	if err != nil || !bytes.Equal(jsonbuf.AppendDecimal(nil, d), text) {
		return decimal.Decimal{}, fmt.Errorf("%q is not an amount as the bank writes one", text)
	}
	return d, nil
}
