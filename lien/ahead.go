package lien

import (
	"sync"

	"github.com/ingot-hpc/ingot/charge"
)

// Pricing ahead: a lien's quote and a charge's price are computed in the
// caller's goroutine, before the change goes to the store's single
// writer, whose time is what bounds the bank (pricing was about a tenth
// of it). The caller reads nothing from the bank for it (a read would make
// the store copy its state for a reader): it takes the pricing the writer
// last used for a call like it, which the writer keeps in lastPricing. The
// writer then uses the price only if it resolves the very same pricing
// (the same compiled table, policy and shape) for the same request (its
// start compared; the rest is the spec's own) or usage (the spec's own);
// otherwise, or when nothing was priced ahead, it prices as always. A
// guess is only ever saved work, never a different result.
//
// It pays only where the callers have cores of their own: callers price
// ahead on machines with runtimetune.OffloadCPUs cores or more (why, with
// the figures, is there), and elsewhere the writer prices.

// lastPricing is the pricing the writer last used, for charges by machine
// (the job's lien names the rest) and for liens by machine, user and the
// project named. A site has few of each: the maps stay small.
type lastPricing struct {
	charges sync.Map // machine -> pricing
	liens   sync.Map // placeKey -> pricing
}

type placeKey struct{ machine, user, project string }

// keep remembers pr under key unless it is there already (the common
// case: a store only when the pricing changes).
func keep[K comparable](m *sync.Map, key K, pr pricing) {
	if pr.quote != 0 { // a guaranteed quote's pricing is the job's own
		return
	}
	if old, ok := m.Load(key); !ok || old.(pricing) != pr {
		m.Store(key, pr)
	}
}

func guess[K comparable](m *sync.Map, key K) (pricing, bool) {
	v, ok := m.Load(key)
	if !ok {
		return pricing{}, false
	}
	return v.(pricing), true
}

// forgetPanic, deferred, turns a panic while pricing ahead into nothing
// priced: the writer prices again, where a panic becomes the call's error
// (as it did before pricing moved ahead), rather than end the process.
func forgetPanic[T any](ahead *T) {
	if recover() != nil {
		var none T
		*ahead = none
	}
}

// chargeAhead is a charge's price, and its detail, made ahead.
type chargeAhead struct {
	pr     pricing
	priced pricedCharge
	ok     bool
}

func (b *Bank) priceChargeAhead(spec ChargeSpec) (ahead chargeAhead) {
	if !b.priceAhead {
		return chargeAhead{}
	}
	defer forgetPanic(&ahead)
	pr, ok := guess(&b.last.charges, spec.Machine)
	if !ok {
		return chargeAhead{}
	}
	priced, err := priceCharge(pr, pr.policy, chargeUsage(spec), spec.Reservation)
	return chargeAhead{pr: pr, priced: priced, ok: err == nil}
}

// price is spec's charge priced under pr, with its detail: the one made
// ahead if it was made with pr (the rest of the detail is spec's own).
func (a chargeAhead) price(pr pricing, spec ChargeSpec) (pricedCharge, error) {
	if a.ok && a.pr == pr {
		return a.priced, nil
	}
	return priceCharge(pr, pr.policy, chargeUsage(spec), spec.Reservation)
}

// quoteAhead is a lien's quote made ahead.
type quoteAhead struct {
	pr      pricing
	request charge.Request // the request priced, its start set
	amount  charge.Amount
	ok      bool
}

// quoteLienAhead quotes a lien whose request has a start of its own (a
// scheduler's at job start). One without starts at the writer's clock,
// which will have moved on from the caller's: its quote is the writer's.
func (b *Bank) quoteLienAhead(spec PlaceSpec) (ahead quoteAhead) {
	defer forgetPanic(&ahead)
	if !b.priceAhead || spec.Quote != 0 || spec.Request.Start.IsZero() {
		return quoteAhead{}
	}
	pr, ok := guess(&b.last.liens, placeKey{spec.Machine, spec.User, spec.Project})
	if !ok {
		return quoteAhead{}
	}
	amount, err := pr.rates.Quote(pr.policy, pr.shape, spec.Request)
	return quoteAhead{pr: pr, request: spec.Request, amount: amount, ok: err == nil}
}

// quote is the quote under pr for request (spec.Request with its start
// set): the one made ahead if it was made with pr and the same start.
func (a quoteAhead) quote(pr pricing, request charge.Request) (charge.Amount, error) {
	if a.ok && a.pr == pr && a.request.Start.Equal(request.Start) {
		return a.amount, nil
	}
	return pr.rates.Quote(pr.policy, pr.shape, request)
}
