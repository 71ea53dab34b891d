package charge

import (
	"fmt"
	"maps"
	"time"
)

// GuaranteedQuote is a price promise: a snapshot of the whole rate table,
// the policy and the machine's node shape as they were when it was made,
// valid until Expires for Uses jobs. A rate created or changed later does
// not apply to a job that uses it. This type is the pure part; storing it
// and counting its uses atomically is the ledger's job.
type GuaranteedQuote struct {
	Table   RateTable `json:"table"`
	Policy  Policy    `json:"policy"`
	Shape   Shape     `json:"shape"`
	Request Request   `json:"request"`
	Amount  Amount    `json:"amount"` // the quote for Request under the snapshot
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	Uses    int       `json:"uses"` // how many jobs may use it
	Used    int       `json:"used"`
}

// Guarantee quotes a request and freezes the table, policy and shape it was
// quoted under, for uses jobs until expires.
func Guarantee(table RateTable, policy Policy, shape Shape, req Request, now, expires time.Time, uses int) (GuaranteedQuote, error) {
	c, err := table.Compile()
	if err != nil {
		return GuaranteedQuote{}, err
	}
	return c.Guarantee(policy, shape, req, now, expires, uses)
}

// Guarantee is the package's Guarantee under the compiled table.
func (c *CompiledTable) Guarantee(policy Policy, shape Shape, req Request, now, expires time.Time, uses int) (GuaranteedQuote, error) {
	if uses < 1 {
		return GuaranteedQuote{}, fmt.Errorf("%w: %d uses (at least 1)", ErrBadQuote, uses)
	}
	if !expires.After(now) {
		return GuaranteedQuote{}, fmt.Errorf("%w: expires %s, not after %s", ErrBadQuote, expires.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	amount, err := c.Quote(policy, shape, req)
	if err != nil {
		return GuaranteedQuote{}, err
	}
	req.Licenses = maps.Clone(req.Licenses)
	return GuaranteedQuote{
		Table: c.table.clone(), Policy: policy, Shape: shape, Request: req, Amount: amount,
		Created: now, Expires: expires, Uses: uses,
	}, nil
}

// Check reports whether a job may use the quote at now: ErrQuoteExpired at
// or after Expires, ErrQuoteUsedUp once every use is taken.
func (q GuaranteedQuote) Check(now time.Time) error {
	if !now.Before(q.Expires) {
		return fmt.Errorf("%w: at %s (valid until %s)", ErrQuoteExpired, now.UTC().Format(time.RFC3339), q.Expires.UTC().Format(time.RFC3339))
	}
	if q.Used >= q.Uses {
		return fmt.Errorf("%w: %d of %d uses taken", ErrQuoteUsedUp, q.Used, q.Uses)
	}
	return nil
}

// Use takes one use for a job (its lien and all its charges) if Check allows it.
func (q *GuaranteedQuote) Use(now time.Time) error {
	if err := q.Check(now); err != nil {
		return err
	}
	q.Used++
	return nil
}

// Price prices a job that took a use of the quote, under the frozen table,
// policy and shape. It does not check expiry: a job that took its use
// before the quote expired is charged under it to the end.
func (q GuaranteedQuote) Price(u Usage) (Amount, error) {
	return Price(q.Table, q.Policy, q.Shape, u)
}
