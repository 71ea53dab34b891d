package lien

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
)

// QuoteSpec asks what a job would cost.
type QuoteSpec struct {
	Machine string         `json:"machine"`
	User    string         `json:"user"`
	Project string         `json:"project,omitempty"`
	Request charge.Request `json:"request"`
}

// QuoteResult is a price: for the project that would be charged, under the
// rates and policy in force.
type QuoteResult struct {
	Project string        `json:"project"`
	Amount  charge.Amount `json:"amount"`
}

// StoredQuote is a guaranteed quote: a frozen rate table, policy and node
// shape, usable by Uses jobs of the project on the machine until Expires.
type StoredQuote struct {
	ID      uint64 `json:"id"`
	Machine string `json:"machine"`
	Project string `json:"project"`
	User    string `json:"user"`
	charge.GuaranteedQuote
}

// Quote prices a job without holding anything.
func (b *Bank) Quote(ctx context.Context, spec QuoteSpec) (QuoteResult, error) {
	var r QuoteResult
	err := b.l.View(ctx, func(tx ledger.Tx) error {
		cfg, err := b.pricingConfig(tx)
		if err != nil {
			return err
		}
		p, err := resolve(tx, spec.Machine, spec.User, spec.Project, true)
		if err != nil {
			return err
		}
		pr, err := b.pricing(tx, cfg, p)
		if err != nil {
			return err
		}
		req := withStart(spec.Request, b.l.Now())
		amount, err := pr.rates.Quote(pr.policy, pr.shape, req)
		if err != nil {
			return fmt.Errorf("%w: quote: %v", ledger.ErrInvalid, err)
		}
		r = QuoteResult{Project: p.project.Name, Amount: amount}
		return nil
	})
	return r, err
}

// Guarantee makes a guaranteed quote: the price holds, whatever the rates
// become, until expires, for uses jobs that name it.
func (b *Bank) Guarantee(ctx context.Context, req ledger.Request, spec QuoteSpec, expires time.Time, uses int) (StoredQuote, error) {
	content := struct {
		Spec    QuoteSpec `json:"spec"`
		Expires time.Time `json:"expires"`
		Uses    int       `json:"uses"`
	}{spec, expires, uses}
	return ledger.Mutate(ctx, b.l, req, ledger.KindRecord, content, func(w *ledger.Writer) (StoredQuote, error) {
		tx := w.Tx()
		cfg, err := b.pricingConfig(tx)
		if err != nil {
			return StoredQuote{}, err
		}
		p, err := resolve(tx, spec.Machine, spec.User, spec.Project, true)
		if err != nil {
			return StoredQuote{}, err
		}
		pr, err := b.pricing(tx, cfg, p)
		if err != nil {
			return StoredQuote{}, err
		}
		g, err := pr.rates.Guarantee(pr.policy, pr.shape, withStart(spec.Request, w.Now()), w.Now(), expires, uses)
		if err != nil {
			return StoredQuote{}, fmt.Errorf("%w: quote: %v", ledger.ErrInvalid, err)
		}
		// The quote is numbered by the journal entry that makes it.
		head, err := tx.Head()
		if err != nil {
			return StoredQuote{}, err
		}
		q := StoredQuote{ID: head.Seq + 1, Machine: p.machine.Name, Project: p.project.Name, User: p.user.Name, GuaranteedQuote: g}
		rec, err := recordOf(recordQuote, quoteKey(q.ID), q)
		if err != nil {
			return StoredQuote{}, err
		}
		_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Node: q.Project, Record: rec, Description: "guaranteed quote " + strconv.FormatUint(q.ID, 10)})
		return q, err
	})
}

// Quotes lists the guaranteed quotes.
func (b *Bank) Quotes(ctx context.Context) ([]StoredQuote, error) {
	var out []StoredQuote
	err := b.l.View(ctx, func(tx ledger.Tx) error {
		var err error
		out, err = allRecords[StoredQuote](tx, recordQuote)
		return err
	})
	return out, err
}

// quoteKey keeps quotes in numeric order among records.
func quoteKey(id uint64) string { return fmt.Sprintf("%020d", id) }

func loadQuote(tx ledger.Tx, id uint64) (StoredQuote, error) {
	var q StoredQuote
	ok, err := loadRecord(tx, recordQuote, quoteKey(id), &q)
	if err == nil && !ok {
		err = fmt.Errorf("%w: no quote %d", ErrQuote, id)
	}
	return q, err
}

func allRecords[T any](tx ledger.Tx, kind string) ([]T, error) {
	rs, err := tx.Records(kind)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(rs))
	for _, r := range rs {
		var v T
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return nil, fmt.Errorf("%w: record %s/%s: %v", ledger.ErrCorrupt, kind, r.Key, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// withStart anchors a request at now when it gives no start.
func withStart(r charge.Request, now time.Time) charge.Request {
	if r.Start.IsZero() {
		r.Start = now
	}
	return r
}
