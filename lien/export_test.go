package lien

// SetPricingAhead turns pricing ahead on or off, whatever the machine's
// cores, so that tests run both ways.
func (b *Bank) SetPricingAhead(on bool) { b.priceAhead = on }

// Copied tells which parts of a result AppendJSON copies from the journal
// entry the call appended rather than encodes.
func (r LienResult) Copied() (lien bool) { return r.lienJSON != nil }

// Copied tells which parts of a result AppendJSON copies from the journal
// entry the call appended rather than encodes.
func (r ChargeResult) Copied() (charge, lien bool) { return r.chargeJSON != nil, r.lienJSON != nil }

// QuoteCopied tells whether AppendJSON copies the quote's JSON kept for
// retries rather than encode the quote.
func (r LienResult) QuoteCopied() bool { return r.quoteJSON != nil }
