package lien

// SetPricingAhead turns pricing ahead on or off, whatever the machine's
// cores, so that tests run both ways.
func (b *Bank) SetPricingAhead(on bool) { b.priceAhead = on }
