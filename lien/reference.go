package lien

import (
	"bytes"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/jsonbuf"
	"github.com/ingot-hpc/ingot/ledger"
)

// A charge's answer is kept for retries by reference to its journal entry
// (ledger.AnswerReference), which holds the same charge and lien: what the
// answer holds besides is how far the charge overran its lien and what it
// released, kept as their text with a zero byte between.

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
