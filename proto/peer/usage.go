package peer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// Record kinds of usage reporting: at a site, the allocations peers
// granted here (by peer and allocation) and the last period reported to
// each peer; at the granting bank, the reports received (by peer and
// period) and the last period each peer reported.
const (
	recordGrant     = "peer.grant"
	recordReported  = "peer.reported"
	recordUsage     = "peer.usage"
	recordLastUsage = "peer.usage.last"
)

// OpUsage reports to the peer that granted allocations here what was
// charged and refunded against them in a period (a UsageReport).
const OpUsage Op = "usage"

// Grant is an allocation here that a peer's deposit made: its usage is
// reported to that peer.
type Grant struct {
	Peer       string    `json:"peer"`
	Allocation uint64    `json:"allocation"`
	Account    string    `json:"account"`
	Tx         string    `json:"tx"`
	End        time.Time `json:"end,omitzero"`
	Received   time.Time `json:"received"`
}

// Sums are what charges came to: how many there were, what they took
// (Charged), what refunds gave back (Refunded), and the difference (Net).
type Sums struct {
	Charges  int             `json:"charges"`
	Charged  decimal.Decimal `json:"charged"`
	Refunded decimal.Decimal `json:"refunded"`
	Net      decimal.Decimal `json:"net"`
}

// zeroSums are sums of nothing, their amounts zero rather than unset.
func zeroSums() Sums { return Sums{Charged: decimal.Zero, Refunded: decimal.Zero, Net: decimal.Zero} }

// add adds o to s.
func (s *Sums) add(o Sums) {
	s.Charges += o.Charges
	s.Charged, s.Refunded, s.Net = s.Charged.Add(o.Charged), s.Refunded.Add(o.Refunded), s.Net.Add(o.Net)
}

// UsageLine is what was charged and refunded in a period against one
// allocation a peer granted (its deposit, Grant).
type UsageLine struct {
	Account    string `json:"account"`
	Allocation uint64 `json:"allocation"`
	Grant      string `json:"grant"`
	Sums
}

// UsageReport is a site's report of a period's usage of the allocations
// a peer granted there, one line per allocation (none: nothing was
// spent). Period names [From, To) (Span).
type UsageReport struct {
	Period string      `json:"period"`
	From   time.Time   `json:"from"`
	To     time.Time   `json:"to"`
	Lines  []UsageLine `json:"lines"`
}

// Net is what the report's lines spent in all.
func (u UsageReport) Net() decimal.Decimal {
	net := decimal.Zero
	for _, l := range u.Lines {
		net = net.Add(l.Net)
	}
	return net
}

// ReceivedUsage is a usage report as the granting bank keeps it: from
// which peer, under which transaction.
type ReceivedUsage struct {
	UsageReport
	Peer string `json:"peer"`
	Tx   string `json:"tx"`
}

// grantKey orders a peer's grants by allocation.
func grantKey(peerName string, allocation uint64) string {
	return fmt.Sprintf("%s/%020d", peerName, allocation)
}

// ReceiveDeposit applies a peer's deposit (its transaction's body, spec)
// and, when it made a new allocation, records the allocation as the
// peer's grant, whose usage is reported to it.
func ReceiveDeposit(ctx context.Context, l *ledger.Ledger, req ledger.Request, peerName string, body []byte, refusals Refusals, spec ledger.DepositSpec) (ledger.Receipt, error) {
	return Receive(ctx, l, req, peerName, OpDeposit, body, refusals, func(w *ledger.Writer) (ledger.Receipt, decimal.Decimal, error) {
		r, err := l.DepositWithin(w, spec)
		if err != nil || spec.Allocation != 0 || len(r.Allocations) != 1 {
			return r, spec.Amount, err
		}
		a := r.Allocations[0]
		g := Grant{Peer: peerName, Allocation: a.ID, Account: a.Account, Tx: req.ID, End: a.End, Received: w.Now()}
		raw, err := json.Marshal(g)
		if err != nil {
			return r, spec.Amount, fmt.Errorf("peer: encode grant %d: %w", a.ID, err)
		}
		_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: peerName, Description: fmt.Sprintf("allocation %d granted by %s", a.ID, peerName),
			Record: &ledger.Record{Kind: recordGrant, Key: grantKey(peerName, a.ID), Value: raw}})
		return r, spec.Amount, err
	})
}

// Grants are the allocations peerName granted here, by allocation.
func (r *Registry) Grants(ctx context.Context, peerName string) ([]Grant, error) {
	var out []Grant
	err := r.l.View(ctx, func(tx ledger.Tx) (err error) {
		out, err = grantsOf(tx, peerName)
		return err
	})
	return out, err
}

// grantsOf are the allocations peerName granted here, as tx reads them.
func grantsOf(tx ledger.Tx, peerName string) ([]Grant, error) {
	recs, err := tx.Records(recordGrant)
	if err != nil {
		return nil, err
	}
	var out []Grant
	for _, rec := range recs {
		if !strings.HasPrefix(rec.Key, peerName+"/") {
			continue
		}
		var g Grant
		if err := json.Unmarshal(rec.Value, &g); err != nil {
			return nil, fmt.Errorf("%w: grant %s: %v", ledger.ErrCorrupt, rec.Key, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// usage is what was charged and refunded in [p.From, p.To) against each
// of grants, read from the journal of their accounts in the change w: one
// line per allocation that was charged or refunded.
func usage(w *ledger.Writer, grants []Grant, p Period) ([]UsageLine, error) {
	byAlloc := map[uint64]Grant{}
	var accounts []string
	for _, g := range grants {
		byAlloc[g.Allocation] = g
		if !slices.Contains(accounts, g.Account) {
			accounts = append(accounts, g.Account)
		}
	}
	lines := map[uint64]*UsageLine{}
	for _, account := range accounts {
		entries, err := w.Journal(ledger.JournalFilter{Node: account, Kinds: []ledger.Kind{ledger.KindCharge, ledger.KindRefund}, From: p.From, To: p.To})
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			for _, d := range e.Deltas {
				g, ok := byAlloc[d.Allocation]
				if !ok {
					continue
				}
				l := lines[d.Allocation]
				if l == nil {
					l = &UsageLine{Account: g.Account, Allocation: g.Allocation, Grant: g.Tx, Sums: zeroSums()}
					lines[d.Allocation] = l
				}
				if e.Kind == ledger.KindCharge {
					l.add(Sums{Charges: 1, Charged: d.Amount.Neg(), Refunded: decimal.Zero, Net: d.Amount.Neg()})
				} else {
					l.add(Sums{Charged: decimal.Zero, Refunded: d.Amount, Net: d.Amount.Neg()})
				}
			}
		}
	}
	out := make([]UsageLine, 0, len(lines))
	for _, l := range lines {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b UsageLine) int { return cmp.Compare(a.Allocation, b.Allocation) })
	return out, nil
}

// ReportDue begins the usage reports due by now (the bank's clock), of
// periods of length every (CheckReportPeriod): for each peer that granted
// allocations here, one per period, from the period of its first grant
// on, as long as one of its grants had not ended when the period began,
// once the period is over. Periods are reported in turn, each from where
// the last one reported ended (so a change of every never leaves a gap or
// covers a time twice: the first period after it ends at the next
// multiple of the new length). Each is begun once: the last period
// reported to the peer is recorded in the change that begins its report.
// At most ReportsAtOnce are begun for a peer at a call, the rest at the
// next (a backlog of short periods would otherwise hold up the outbox,
// which calls it before it sends, for a change each). The outbox sends
// them as it sends every transaction.
func (r *Registry) ReportDue(ctx context.Context, every time.Duration) ([]Transaction, error) {
	if err := CheckReportPeriod(every); err != nil {
		return nil, err
	}
	now := r.l.Now()
	peers, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	var begun []Transaction
	for _, p := range peers {
		grants, err := r.Grants(ctx, p.Name)
		if err != nil || len(grants) == 0 {
			if err != nil {
				return begun, err
			}
			continue
		}
		var last Period
		if err := r.l.View(ctx, func(tx ledger.Tx) (err error) {
			last, err = lastReported(tx, p.Name)
			return err
		}); err != nil {
			return begun, err
		}
		from := last.To
		if from.IsZero() {
			from = slices.MinFunc(grants, func(a, b Grant) int { return a.Received.Compare(b.Received) }).Received.UTC().Truncate(every)
		}
		n := 0
		for span := Span(from, from.Truncate(every).Add(every)); n < ReportsAtOnce && !span.To.After(now) && live(grants, span.From); span = Span(span.To, span.To.Add(every)) {
			n++
			t, err := r.report(ctx, p.Name, span, last)
			if errors.Is(err, errReported) {
				break // another reporter got there first
			}
			if err != nil {
				return begun, err
			}
			begun, last = append(begun, t), span
		}
	}
	return begun, nil
}

// ReportsAtOnce is how many usage reports ReportDue begins for a peer at
// a call.
const ReportsAtOnce = 100

// errReported marks a period reported since the reporter read the last
// one, or not over by the clock of the change that would report it.
var errReported = errors.New("peer: usage reported already, or not due")

// live says whether one of grants had not ended by t.
func live(grants []Grant, t time.Time) bool {
	return slices.ContainsFunc(grants, func(g Grant) bool { return g.End.IsZero() || g.End.After(t) })
}

// report begins the report of a period to a peer, and records the period
// as the last reported, in one change, if the last reported is still
// last. The grants and their usage are read in that change: its own entry
// is made after the period's end, and no entry committed after it is
// older (entry times never go backwards), so the report holds every
// charge and refund journaled in the period, and the next report none of
// them.
func (r *Registry) report(ctx context.Context, peerName string, span, last Period) (Transaction, error) {
	req := ledger.Request{Actor: "peer-reporter"}
	return ledger.Mutate(ctx, r.l, req, ledger.KindRecord, nil, func(w *ledger.Writer) (Transaction, error) {
		got, err := lastReported(w.Tx(), peerName)
		if err != nil {
			return Transaction{}, err
		}
		if !got.To.Equal(last.To) || w.Now().Before(span.To) {
			return Transaction{}, errReported
		}
		grants, err := grantsOf(w.Tx(), peerName)
		if err != nil {
			return Transaction{}, err
		}
		lines, err := usage(w, grants, span)
		if err != nil {
			return Transaction{}, err
		}
		u := UsageReport{Period: span.Name, From: span.From, To: span.To, Lines: lines}
		raw, err := json.Marshal(u)
		if err != nil {
			return Transaction{}, fmt.Errorf("peer: encode the usage of %s: %w", span.Name, err)
		}
		t := Transaction{ID: newTxID(), Peer: peerName, Op: OpUsage, Body: raw, Amount: u.Net(), State: StatePending, Created: w.Now()}
		if err := putTx(w, t, fmt.Sprintf("usage of %s to %s begun", span.Name, peerName)); err != nil {
			return Transaction{}, err
		}
		value, err := json.Marshal(span)
		if err != nil {
			return Transaction{}, fmt.Errorf("peer: encode period %s: %w", span.Name, err)
		}
		_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: peerName, Description: "usage reported through " + span.Name,
			Record: &ledger.Record{Kind: recordReported, Key: peerName, Value: value}})
		return t, err
	})
}

// lastReported is the last period whose usage was reported to the peer,
// zero if none was. A bank that reported days before periods were
// recorded by their bounds holds the day's name.
func lastReported(tx ledger.Tx, peerName string) (Period, error) {
	rec, ok, err := tx.Record(recordReported, peerName)
	if err != nil || !ok {
		return Period{}, err
	}
	p, err := decodePeriod(rec.Value)
	if err != nil {
		return Period{}, fmt.Errorf("%w: the last period reported to %s: %v", ledger.ErrCorrupt, peerName, err)
	}
	return p, nil
}

// decodePeriod reads a period recorded by its bounds, or by a day's
// name.
func decodePeriod(raw []byte) (Period, error) {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		return ParsePeriod(name)
	}
	var p Period
	if err := json.Unmarshal(raw, &p); err != nil {
		return Period{}, err
	}
	if !p.From.Before(p.To) {
		return Period{}, fmt.Errorf("period %s ends before it begins", ledger.Excerpt(p.Name))
	}
	return p, nil
}

// ReceiveUsage records a site's usage report, under its transaction's id:
// once per peer and period (a day at most; periods of one peer never
// overlap), of allocations this bank granted to that peer (a deposit at
// it, done: one whose answer is not recorded here yet is ErrGrantPending,
// not final), each line naming the account it deposited in.
func ReceiveUsage(ctx context.Context, l *ledger.Ledger, req ledger.Request, peerName string, body []byte, refusals Refusals, u UsageReport) (ReceivedUsage, error) {
	if !u.From.Before(u.To) || u.To.Sub(u.From) > 24*time.Hour || u.Period != Span(u.From, u.To).Name {
		return ReceivedUsage{}, fmt.Errorf("%w: usage report: period %s from %s to %s: want a period of a day at most, named %s",
			ledger.ErrInvalid, ledger.Excerpt(u.Period), u.From, u.To, Span(u.From, u.To).Name)
	}
	for _, line := range u.Lines {
		if !line.Net.Equal(line.Charged.Sub(line.Refunded)) {
			return ReceivedUsage{}, fmt.Errorf("%w: usage report %s: allocation %d: net %s is not %s charged less %s refunded", ledger.ErrInvalid, u.Period, line.Allocation, line.Net, line.Charged, line.Refunded)
		}
	}
	return Receive(ctx, l, req, peerName, OpUsage, body, refusals, func(w *ledger.Writer) (ReceivedUsage, decimal.Decimal, error) {
		for _, line := range u.Lines {
			if err := checkGrant(w.Tx(), peerName, line); err != nil {
				return ReceivedUsage{}, decimal.Zero, err
			}
		}
		last, err := lastReceived(w.Tx(), peerName)
		if err != nil {
			return ReceivedUsage{}, decimal.Zero, err
		}
		if u.From.Before(last.To) {
			return ReceivedUsage{}, decimal.Zero, fmt.Errorf("%w: %s reported its usage up to %s already (%s), and %s begins before",
				ledger.ErrExists, peerName, last.To.Format(time.RFC3339), last.Name, u.Period)
		}
		key := peerName + "/" + u.Period
		ru := ReceivedUsage{UsageReport: u, Peer: peerName, Tx: req.ID}
		raw, err := json.Marshal(ru)
		if err != nil {
			return ReceivedUsage{}, decimal.Zero, fmt.Errorf("peer: encode usage of %s: %w", key, err)
		}
		span, err := json.Marshal(Span(u.From, u.To))
		if err != nil {
			return ReceivedUsage{}, decimal.Zero, fmt.Errorf("peer: encode period %s: %w", u.Period, err)
		}
		for _, rec := range []ledger.Record{{Kind: recordUsage, Key: key, Value: raw}, {Kind: recordLastUsage, Key: peerName, Value: span}} {
			if _, err := w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: peerName, Description: fmt.Sprintf("usage of %s reported by %s", u.Period, peerName),
				Record: &rec}); err != nil {
				return ReceivedUsage{}, decimal.Zero, err
			}
		}
		return ru, u.Net(), nil
	})
}

// lastReceived is the last period whose usage the peer reported here,
// zero if none. A bank that received reports before the last was
// recorded finds it among them.
func lastReceived(tx ledger.Tx, peerName string) (Period, error) {
	rec, ok, err := tx.Record(recordLastUsage, peerName)
	if err != nil {
		return Period{}, err
	}
	if ok {
		p, err := decodePeriod(rec.Value)
		if err != nil {
			return Period{}, fmt.Errorf("%w: the last period %s reported: %v", ledger.ErrCorrupt, peerName, err)
		}
		return p, nil
	}
	recs, err := tx.Records(recordUsage)
	if err != nil {
		return Period{}, err
	}
	var last Period
	for _, rec := range recs {
		if !strings.HasPrefix(rec.Key, peerName+"/") {
			continue
		}
		var u ReceivedUsage
		if err := json.Unmarshal(rec.Value, &u); err != nil {
			return Period{}, fmt.Errorf("%w: usage report %s: %v", ledger.ErrCorrupt, rec.Key, err)
		}
		if u.To.After(last.To) {
			last = Span(u.From, u.To)
		}
	}
	return last, nil
}

// checkGrant refuses a usage line of an allocation this bank did not
// grant to the peer: its grant must be a deposit this bank began with
// that peer, done, into the line's account, and the allocation the one
// the peer's receipt for it named.
func checkGrant(tx ledger.Tx, peerName string, line UsageLine) error {
	t, err := getTx(tx, line.Grant)
	if err != nil || t.Peer != peerName || t.Op != OpDeposit || t.State == StateRefused {
		return fmt.Errorf("%w: usage of %s's allocation %d: %s is not a deposit of this bank's at %s", ErrNotGranted, line.Account, line.Allocation, ledger.Excerpt(line.Grant), peerName)
	}
	var spec ledger.DepositSpec
	if err := json.Unmarshal(t.Body, &spec); err != nil {
		return fmt.Errorf("%w: peer transaction %s: %v", ledger.ErrCorrupt, t.ID, err)
	}
	if spec.Account != line.Account {
		return fmt.Errorf("%w: usage of %s's allocation %d: grant %s was deposited into %s", ErrNotGranted, line.Account, line.Allocation, t.ID, spec.Account)
	}
	if t.State == StatePending {
		// The peer has the grant (it reports using it): its answer is
		// on the way, lost, or not journaled here yet.
		return fmt.Errorf("%w: usage of %s's allocation %d: grant %s", ErrGrantPending, line.Account, line.Allocation, t.ID)
	}
	var receipt ledger.Receipt
	if err := json.Unmarshal(t.Answer, &receipt); err != nil {
		return fmt.Errorf("%w: the receipt of peer transaction %s: %v", ledger.ErrCorrupt, t.ID, err)
	}
	if !slices.ContainsFunc(receipt.Deltas, func(d ledger.Delta) bool { return d.Allocation == line.Allocation }) {
		return fmt.Errorf("%w: usage of %s's allocation %d: grant %s was deposited into another allocation", ErrNotGranted, line.Account, line.Allocation, t.ID)
	}
	return nil
}

// Reported are the usage reports peers sent this bank for the periods that
// begin in [from, to) (zero bounds: open), of every peer ("") or of one.
// They need no key: a bank's reports are read like its other records.
func Reported(ctx context.Context, l *ledger.Ledger, peerName string, from, to time.Time) ([]ReceivedUsage, error) {
	var out []ReceivedUsage
	err := l.View(ctx, func(tx ledger.Tx) error {
		recs, err := tx.Records(recordUsage)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if peerName != "" && !strings.HasPrefix(rec.Key, peerName+"/") {
				continue
			}
			var u ReceivedUsage
			if err := json.Unmarshal(rec.Value, &u); err != nil {
				return fmt.Errorf("%w: usage report %s: %v", ledger.ErrCorrupt, rec.Key, err)
			}
			if (from.IsZero() || !u.From.Before(from)) && (to.IsZero() || u.From.Before(to)) {
				out = append(out, u)
			}
		}
		return nil
	})
	return out, err
}

// Keep is reports with only the lines keep says yes to, and without
// those left with none (a period of no usage included).
func Keep(reports []ReceivedUsage, keep func(UsageLine) bool) []ReceivedUsage {
	var out []ReceivedUsage
	for _, u := range reports {
		u.Lines = slices.DeleteFunc(slices.Clone(u.Lines), func(l UsageLine) bool { return !keep(l) })
		if len(u.Lines) > 0 {
			out = append(out, u)
		}
	}
	return out
}

// UsageRows are the reports' lines as rows of `ingot usage` (lien.Usage),
// each marked with the peer that reported it: those of accounts in f's
// node, in its period, grouped as lien.Usage groups charges. A site
// reports no users, machines or jobs: a filter by user or machine keeps
// none, and those keys, and the count of jobs, are left empty.
func UsageRows(reports []ReceivedUsage, f lien.ChargeFilter, by []string, period string, loc *time.Location) []lien.UsageRow {
	if f.User != "" || f.Machine != "" {
		return nil
	}
	rows := map[lien.UsageRow]*lien.UsageRow{}
	var order []lien.UsageRow
	for _, u := range reports {
		if !f.Since.IsZero() && u.From.Before(f.Since) || !f.Until.IsZero() && !u.From.Before(f.Until) {
			continue
		}
		for _, l := range u.Lines {
			if f.Node != "" && !ledger.InSubtree(l.Account, f.Node) {
				continue
			}
			key := lien.UsageRow{Period: lien.PeriodStart(u.From, period, loc), Peer: u.Peer}
			if slices.Contains(by, "project") {
				key.Project = l.Account
			}
			r := rows[key]
			if r == nil {
				r = &lien.UsageRow{Period: key.Period, Project: key.Project, Peer: key.Peer, Charged: decimal.Zero, Refunded: decimal.Zero, Net: decimal.Zero}
				rows[key] = r
				order = append(order, key)
			}
			r.Charges += l.Charges
			r.Charged = r.Charged.Add(l.Charged)
			r.Refunded = r.Refunded.Add(l.Refunded)
			r.Net = r.Net.Add(l.Net)
		}
	}
	out := make([]lien.UsageRow, len(order))
	for i, k := range order {
		out[i] = *rows[k]
	}
	return out
}

// Spent is what a peer reported spending of the grants into one account
// in some periods: Reports is how many reports had a line of it.
type Spent struct {
	Peer    string `json:"peer"`
	Account string `json:"account"`
	Reports int    `json:"reports"`
	Sums
}

// SpentAt is what peers reported spending of the grants into account
// there in the periods that begin in [from, to), per peer (SpentOf).
func SpentAt(ctx context.Context, l *ledger.Ledger, account string, from, to time.Time) ([]Spent, error) {
	reports, err := Reported(ctx, l, "", from, to)
	return SpentOf(reports, account), err
}

// SpentOf sums the reports' lines of account, per peer, in peer order.
func SpentOf(reports []ReceivedUsage, account string) []Spent {
	out := []Spent{}
	for _, u := range reports {
		counted := false
		for _, l := range u.Lines {
			if l.Account != account {
				continue
			}
			i := slices.IndexFunc(out, func(s Spent) bool { return s.Peer == u.Peer })
			if i < 0 {
				out = append(out, Spent{Peer: u.Peer, Account: account, Sums: zeroSums()})
				i = len(out) - 1
			}
			s := &out[i]
			if !counted {
				s.Reports, counted = s.Reports+1, true
			}
			s.add(l.Sums)
		}
	}
	slices.SortFunc(out, func(a, b Spent) int { return cmp.Compare(a.Peer, b.Peer) })
	return out
}
