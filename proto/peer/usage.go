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
// granted here (by peer and allocation) and the last day reported to each
// peer; at the granting bank, the reports received (by peer and day).
const (
	recordGrant    = "peer.grant"
	recordReported = "peer.reported"
	recordUsage    = "peer.usage"
)

// OpUsage reports to the peer that granted allocations here what was
// charged and refunded against them in a day (a UsageReport).
const OpUsage Op = "usage"

// ReportDelay is how long after a day's end its usage is reported: long
// enough for every change begun in the day to be journaled (an entry's
// time is its change's start).
const ReportDelay = time.Minute

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

// UsageReport is a site's report of a day's usage of the allocations a
// peer granted there, one line per allocation (none: nothing was spent).
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
	err := r.l.View(ctx, func(tx ledger.Tx) error {
		recs, err := tx.Records(recordGrant)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if !strings.HasPrefix(rec.Key, peerName+"/") {
				continue
			}
			var g Grant
			if err := json.Unmarshal(rec.Value, &g); err != nil {
				return fmt.Errorf("%w: grant %s: %v", ledger.ErrCorrupt, rec.Key, err)
			}
			out = append(out, g)
		}
		return nil
	})
	return out, err
}

// Usage is what was charged and refunded in [p.From, p.To) against each
// of grants, read from the journal of their accounts: one line per
// allocation that was charged or refunded.
func (r *Registry) Usage(ctx context.Context, grants []Grant, p Period) ([]UsageLine, error) {
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
		entries, err := r.l.Journal(ctx, ledger.JournalFilter{Node: account, Kinds: []ledger.Kind{ledger.KindCharge, ledger.KindRefund}, From: p.From, To: p.To})
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

// ReportDue begins the usage reports due by now (the bank's clock): for
// each peer that
// granted allocations here, one per day, from the day of its first grant
// on, as long as one of its grants had not ended when the day began, once
// the day has been over for ReportDelay. Each report is begun once: the
// last day reported to the peer is recorded in the change that begins it.
// The outbox sends them as it sends every transaction.
func (r *Registry) ReportDue(ctx context.Context) ([]Transaction, error) {
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
		last, err := r.lastReported(ctx, p.Name)
		if err != nil {
			return begun, err
		}
		day := Day(slices.MinFunc(grants, func(a, b Grant) int { return a.Received.Compare(b.Received) }).Received)
		if last != "" {
			d, err := ParsePeriod(last)
			if err != nil {
				return begun, fmt.Errorf("%w: the last day reported to %s: %v", ledger.ErrCorrupt, p.Name, err)
			}
			day = Day(d.To)
		}
		for ; !day.To.Add(ReportDelay).After(now) && live(grants, day.From); day = Day(day.To) {
			t, err := r.report(ctx, p.Name, grants, day, last)
			if errors.Is(err, errReported) {
				break // another reporter got there first
			}
			if err != nil {
				return begun, err
			}
			begun, last = append(begun, t), day.Name
		}
	}
	return begun, nil
}

// errReported marks a day reported since the reporter read the last one.
var errReported = errors.New("peer: usage reported already")

// live says whether one of grants had not ended by t.
func live(grants []Grant, t time.Time) bool {
	return slices.ContainsFunc(grants, func(g Grant) bool { return g.End.IsZero() || g.End.After(t) })
}

// report begins the report of a day to a peer, and records the day as the
// last reported, in one change, if the last reported is still last.
func (r *Registry) report(ctx context.Context, peerName string, grants []Grant, day Period, last string) (Transaction, error) {
	lines, err := r.Usage(ctx, grants, day)
	if err != nil {
		return Transaction{}, err
	}
	u := UsageReport{Period: day.Name, From: day.From, To: day.To, Lines: lines}
	raw, err := json.Marshal(u)
	if err != nil {
		return Transaction{}, fmt.Errorf("peer: encode the usage of %s: %w", day.Name, err)
	}
	req := ledger.Request{Actor: "peer-reporter"}
	return ledger.Mutate(ctx, r.l, req, ledger.KindRecord, nil, func(w *ledger.Writer) (Transaction, error) {
		rec, _, err := w.Tx().Record(recordReported, peerName)
		if err != nil {
			return Transaction{}, err
		}
		var got string
		if rec.Value != nil {
			if err := json.Unmarshal(rec.Value, &got); err != nil {
				return Transaction{}, fmt.Errorf("%w: the last day reported to %s: %v", ledger.ErrCorrupt, peerName, err)
			}
		}
		if got != last {
			return Transaction{}, errReported
		}
		t := Transaction{ID: newTxID(), Peer: peerName, Op: OpUsage, Body: raw, Amount: u.Net(), State: StatePending, Created: w.Now()}
		if err := putTx(w, t, fmt.Sprintf("usage of %s to %s begun", day.Name, peerName)); err != nil {
			return Transaction{}, err
		}
		value, _ := json.Marshal(day.Name)
		_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: peerName, Description: "usage reported through " + day.Name,
			Record: &ledger.Record{Kind: recordReported, Key: peerName, Value: value}})
		return t, err
	})
}

// lastReported is the last day whose usage was reported to the peer, ""
// if none was.
func (r *Registry) lastReported(ctx context.Context, peerName string) (string, error) {
	var last string
	err := r.l.View(ctx, func(tx ledger.Tx) error {
		rec, ok, err := tx.Record(recordReported, peerName)
		if err != nil || !ok {
			return err
		}
		if err := json.Unmarshal(rec.Value, &last); err != nil {
			return fmt.Errorf("%w: the last day reported to %s: %v", ledger.ErrCorrupt, peerName, err)
		}
		return nil
	})
	return last, err
}

// ReceiveUsage records a site's usage report, under its transaction's id:
// once per peer and day, of allocations this bank granted to that peer
// (a deposit at it, done), each line naming the account it deposited in.
func ReceiveUsage(ctx context.Context, l *ledger.Ledger, req ledger.Request, peerName string, body []byte, refusals Refusals, u UsageReport) (ReceivedUsage, error) {
	day, err := ParsePeriod(u.Period)
	if err != nil || !day.From.Equal(u.From) || !day.To.Equal(u.To) || day.To.Sub(day.From) != 24*time.Hour {
		return ReceivedUsage{}, fmt.Errorf("%w: usage report: period %s from %s to %s is not a UTC day", ledger.ErrInvalid, ledger.Excerpt(u.Period), u.From, u.To)
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
		key := peerName + "/" + u.Period
		if _, ok, err := w.Tx().Record(recordUsage, key); err != nil {
			return ReceivedUsage{}, decimal.Zero, err
		} else if ok {
			return ReceivedUsage{}, decimal.Zero, fmt.Errorf("%w: %s reported the usage of %s already", ledger.ErrExists, peerName, u.Period)
		}
		ru := ReceivedUsage{UsageReport: u, Peer: peerName, Tx: req.ID}
		raw, err := json.Marshal(ru)
		if err != nil {
			return ReceivedUsage{}, decimal.Zero, fmt.Errorf("peer: encode usage of %s: %w", key, err)
		}
		_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: peerName, Description: fmt.Sprintf("usage of %s reported by %s", u.Period, peerName),
			Record: &ledger.Record{Kind: recordUsage, Key: key, Value: raw}})
		return ru, u.Net(), err
	})
}

// checkGrant refuses a usage line of an allocation this bank did not
// grant to the peer: its grant must be a deposit this bank began with
// that peer, done, into the line's account, and the allocation the one
// the peer's receipt for it named.
func checkGrant(tx ledger.Tx, peerName string, line UsageLine) error {
	t, err := getTx(tx, line.Grant)
	if err != nil || t.Peer != peerName || t.Op != OpDeposit || t.State != StateDone {
		return fmt.Errorf("%w: usage of %s's allocation %d: %s is not a deposit of this bank's at %s", ErrNotGranted, line.Account, line.Allocation, ledger.Excerpt(line.Grant), peerName)
	}
	var spec ledger.DepositSpec
	if err := json.Unmarshal(t.Body, &spec); err != nil {
		return fmt.Errorf("%w: peer transaction %s: %v", ledger.ErrCorrupt, t.ID, err)
	}
	if spec.Account != line.Account {
		return fmt.Errorf("%w: usage of %s's allocation %d: grant %s was deposited into %s", ErrNotGranted, line.Account, line.Allocation, t.ID, spec.Account)
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

// Reported are the usage reports peers sent this bank for the days that
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
// those left with none (a day of no usage included).
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
// over some days.
type Spent struct {
	Peer    string `json:"peer"`
	Account string `json:"account"`
	Days    int    `json:"days"`
	Sums
}

// SpentAt is what peers reported spending of the grants into account
// there in the days that begin in [from, to), per peer (SpentOf).
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
				s.Days, counted = s.Days+1, true
			}
			s.add(l.Sums)
		}
	}
	slices.SortFunc(out, func(a, b Spent) int { return cmp.Compare(a.Peer, b.Peer) })
	return out
}
