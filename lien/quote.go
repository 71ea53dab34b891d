package lien

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

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

// QuoteResult is a price, for the project that would be charged under the
// rates and policy in force, and whether a lien for the job would be
// granted now: the one answer a submit hook needs.
type QuoteResult struct {
	Project string        `json:"project"`
	Amount  charge.Amount `json:"amount"`
	// Available is what a lien on Project may take now on the machine: the
	// account's funds usable there, capped by the project's HFS share.
	Available decimal.Decimal `json:"available"`
	// Covered says a lien placed now would be granted: on Project, or on
	// Fallback when that is set (Project cannot cover it; the fallback can).
	Covered  bool   `json:"covered"`
	Fallback string `json:"fallback,omitempty"`
	// Refusal is why a lien would be refused, as lien place would say it.
	Refusal string `json:"refusal,omitempty"`
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

// Quote prices a job without holding anything, and says whether its lien
// would be granted now and where.
func (b *Bank) Quote(ctx context.Context, spec QuoteSpec) (QuoteResult, error) {
	var r QuoteResult
	err := b.l.Inspect(ctx, func(w *ledger.Writer) error {
		tx := w.Tx()
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
		req := withStart(spec.Request, w.Now())
		amount, err := pr.rates.Quote(pr.policy, pr.shape, req)
		if err != nil {
			return fmt.Errorf("%w: quote: %v", ledger.ErrInvalid, err)
		}
		r = QuoteResult{Project: p.project.Name, Amount: amount}
		return b.coverage(w, cfg, spec.Machine, &r)
	})
	return r, err
}

// coverage fills in whether r's job would get its lien now, by the same
// steps as placing it.
func (b *Bank) coverage(w *ledger.Writer, cfg Config, machine string, r *QuoteResult) error {
	_, available, _, err := b.availableTo(w, r.Project, machine, nil)
	if err != nil {
		return err
	}
	r.Available = available
	project, _, err := b.cover(w, cfg, r.Project, machine, r.Amount.Credits, nil)
	switch {
	case err == nil:
		r.Covered = true
		if project != r.Project {
			r.Fallback = project
		}
	case errors.Is(err, ledger.ErrInsufficientFunds):
		r.Refusal = err.Error()
	default:
		return err
	}
	return nil
}

// Guarantee makes a guaranteed quote: the price holds, whatever the rates
// become, until expires, for uses jobs that name it. It is refused when
// the job's lien would be refused now.
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
		// As Gold refused it: a price is guaranteed only to a job whose
		// lien would be granted now, on the project or its fallback.
		if _, _, err := b.cover(w, cfg, p.project.Name, p.machine.Name, g.Amount.Credits, nil); err != nil {
			return StoredQuote{}, fmt.Errorf("guaranteed quote refused: %w", err)
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
