package ledger

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/ahead"
)

// Statement is Gold's gstatement for an account over [From, To): the
// balance before, every credit and debit in the period, and the balance
// after. Balances here are the sum of the remaining amounts of all of the
// account's allocations, active or not, so that
// Beginning + Credits - Debits = Ending always holds; `balance` shows what
// is usable now.
type Statement struct {
	Account   string          `json:"account"`
	From      time.Time       `json:"from"`
	To        time.Time       `json:"to"`
	Beginning decimal.Decimal `json:"beginning_balance"`
	Credits   decimal.Decimal `json:"total_credits"`
	Debits    decimal.Decimal `json:"total_debits"`
	Ending    decimal.Decimal `json:"ending_balance"`
	// CreditLines and DebitLines are one line per journal entry, or, with
	// summarize, one line per kind.
	CreditLines []StatementLine `json:"credits"`
	DebitLines  []StatementLine `json:"debits"`
}

// StatementLine is one credit or debit (always a positive amount).
type StatementLine struct {
	Seq         uint64          `json:"seq,omitempty"`
	Time        time.Time       `json:"time,omitzero"`
	Kind        Kind            `json:"kind"`
	Count       int             `json:"count"`
	Amount      decimal.Decimal `json:"amount"`
	Allocations []uint64        `json:"allocations,omitempty"`
	Ref         string          `json:"ref,omitempty"`
	Actor       string          `json:"actor,omitempty"`
	Description string          `json:"description,omitempty"`
}

// Statement reports an account's credits and debits over [from, to).
func (l *Ledger) Statement(ctx context.Context, account string, from, to time.Time, summarize bool) (Statement, error) {
	from, to = stamp(from), stamp(to)
	if !to.After(from) {
		return Statement{}, fmt.Errorf("%w: statement: end %s is not after start %s", ErrInvalid, to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	st := Statement{Account: account, From: from, To: to, Credits: decimal.Zero, Debits: decimal.Zero}
	err := l.view(ctx, func(tx Tx) error {
		n, err := GetNode(tx, account)
		if err != nil {
			return err
		}
		if !n.IsAccount() {
			return fmt.Errorf("%w: statement: %s is a project of %s; statements are per account", ErrInvalid, account, n.Account())
		}
		first, err := seqAtOrBefore(tx, from.Add(-time.Microsecond))
		if err != nil {
			return err
		}
		last, err := seqAtOrBefore(tx, to.Add(-time.Microsecond))
		if err != nil {
			return err
		}
		if st.Beginning, err = totalAsOf(tx, account, first); err != nil {
			return err
		}
		if st.Ending, err = totalAsOf(tx, account, last); err != nil {
			return err
		}
		entries := func(fn func(StoredEntry) (bool, error)) error {
			return tx.NodeEntries(account, first+1, last, false, fn)
		}
		return ahead.Map(entries, decodeMoves, func(m moves) (bool, error) {
			if m.err != nil {
				return false, m.err
			}
			credit, debit := statementLines(m.e, account)
			if credit != nil {
				st.Credits = st.Credits.Add(credit.Amount)
				st.CreditLines = append(st.CreditLines, *credit)
			}
			if debit != nil {
				st.Debits = st.Debits.Add(debit.Amount)
				st.DebitLines = append(st.DebitLines, *debit)
			}
			return true, nil
		})
	})
	if err != nil {
		return Statement{}, err
	}
	if summarize {
		st.CreditLines, st.DebitLines = summarizeLines(st.CreditLines), summarizeLines(st.DebitLines)
	}
	return st, nil
}

// moves is what a statement reads of an entry: what it says of itself
// and the allocations it changed (no lien, charge or state).
type moves struct {
	e   Entry
	err error
}

// deltasKey is in the JSON of every entry that changed an allocation.
var deltasKey = []byte(`"deltas":`)

// decodeMoves decodes the parts of an entry a statement reads: of a
// binary body its head and deltas, which come first; of a JSON one
// (written before schema 12) nothing if it changed no allocation (a lien,
// a new node), which no line shows (a key that is not in the bytes is not
// in the entry, since a string in JSON holds no bare quote), else its
// head and deltas if laid out as the ledger wrote them, else all of it.
func decodeMoves(se StoredEntry) moves {
	var e Entry
	var err error
	switch {
	case binaryBody(se.Body):
		e, err = decodeBinary(se.Body, readMoves)
		if err == nil && e.Seq != se.Seq {
			err = fmt.Errorf("journal entry %d holds entry %d", se.Seq, e.Seq)
		}
		if err != nil {
			err = fmt.Errorf("%w: journal entry %d does not decode: %v", ErrCorrupt, se.Seq, err)
		}
		return moves{e: e, err: err}
	case !bytes.Contains(se.Body, deltasKey):
		return moves{}
	}
	if e, ok := readEnds(se.Body); ok && e.Seq == se.Seq {
		return moves{e: e}
	}
	e, err = DecodeEntry(se)
	return moves{e: e, err: err}
}

// headKeys are the keys an entry's JSON begins with: plain values, which
// the ledger wrote first (Entry's order).
var headKeys = []string{"seq", "time", "actor", "request_id", "kind", "node", "ref", "description"}

// readEnds reads the head of a JSON entry and its deltas, and not what
// lies between them (its lien, its charge: most of its bytes), which a
// statement does not show. The ledger wrote Entry's fields in order:
// the head first, the deltas last but for the answer's hash and the
// previous entry's. ok is false for bytes not laid out so (an entry of an
// older ingot), which are decoded whole.
func readEnds(body []byte) (e Entry, ok bool) {
	head := headEnd(body)
	if head < 0 || json.Unmarshal(append(body[:head:head], '}'), &e) != nil {
		return e, false
	}
	at := bytes.LastIndex(body, deltasKey) + len(deltasKey)
	dec := json.NewDecoder(bytes.NewReader(body[at:]))
	if err := dec.Decode(&e.Deltas); err != nil {
		return e, false
	}
	return e, isTail(body[at+int(dec.InputOffset()):])
}

// headEnd is where the first key after the head begins (-1: none). A
// comma before a quote is a key's beginning there: a string's quotes are
// escaped.
func headEnd(body []byte) int {
	for at := 0; ; {
		i := bytes.Index(body[at:], []byte(`,"`))
		if i < 0 {
			return -1
		}
		at += i
		key, _, found := bytes.Cut(body[at+2:], []byte(`"`))
		if !found || !slices.Contains(headKeys, string(key)) {
			return at
		}
		at += 2 + len(key)
	}
}

// isTail says whether rest is what follows an entry's deltas: the
// answer's hash, if any, and the previous entry's, closing the entry.
func isTail(rest []byte) bool {
	hash := func(key string) bool {
		var ok bool
		if rest, ok = bytes.CutPrefix(rest, []byte(`,"`+key+`":"`)); !ok {
			return false
		}
		n := bytes.IndexFunc(rest, func(r rune) bool { return !strings.ContainsRune("0123456789abcdef", r) })
		if n < 0 || rest[n] != '"' {
			return false
		}
		rest = rest[n+1:]
		return true
	}
	if bytes.HasPrefix(rest, []byte(`,"answer":`)) && !hash("answer") {
		return false
	}
	return hash("prev_hash") && string(rest) == "}"
}

// statementLines splits what an entry did to the account's allocations into
// a credit line and a debit line (either may be nil).
func statementLines(e Entry, account string) (credit, debit *StatementLine) {
	for _, d := range e.Deltas {
		if d.Account != account || d.Amount.IsZero() {
			continue
		}
		line := &credit
		if d.Amount.IsNegative() {
			line = &debit
		}
		if *line == nil {
			ref := e.Ref
			if ref == account {
				ref = e.Node // a transfer in names where it came from
			}
			*line = &StatementLine{Seq: e.Seq, Time: e.Time, Kind: e.Kind, Count: 1, Amount: decimal.Zero,
				Ref: ref, Actor: e.Actor, Description: e.Description}
		}
		(*line).Amount = (*line).Amount.Add(d.Amount.Abs())
		if !slices.Contains((*line).Allocations, d.Allocation) {
			(*line).Allocations = append((*line).Allocations, d.Allocation)
		}
	}
	return credit, debit
}

// summarizeLines folds lines into one per kind, in order of first
// appearance.
func summarizeLines(lines []StatementLine) []StatementLine {
	var out []StatementLine
	for _, l := range lines {
		i := slices.IndexFunc(out, func(s StatementLine) bool { return s.Kind == l.Kind })
		if i < 0 {
			out = append(out, StatementLine{Kind: l.Kind, Amount: decimal.Zero})
			i = len(out) - 1
		}
		out[i].Count++
		out[i].Amount = out[i].Amount.Add(l.Amount)
	}
	return out
}

// totalAsOf sums the remaining amounts of all the account's allocations
// after entry seq.
func totalAsOf(tx Tx, account string, seq uint64) (decimal.Decimal, error) {
	allocs, err := allocationsAsOf(tx, account, seq)
	total := decimal.Zero
	for _, a := range allocs {
		total = total.Add(a.Amount)
	}
	return total, err
}

// JournalFilter selects journal entries; zero fields select everything.
type JournalFilter struct {
	// Node selects entries that name the node or a node of its subtree, or
	// change one of its allocations.
	Node  string
	Kinds []Kind
	// Job selects the entries of the liens, charges and refunds of a job,
	// on Machine if that is not empty.
	Job, Machine string
	From         time.Time // inclusive
	To           time.Time // exclusive
	// Limit keeps the newest Limit entries.
	Limit int
}

// Journal lists entries in order.
func (l *Ledger) Journal(ctx context.Context, f JournalFilter) ([]Entry, error) {
	var out []Entry
	err := l.view(ctx, func(tx Tx) error {
		var err error
		out, err = journal(tx, f)
		return err
	})
	return out, err
}

// Journal lists the entries f selects, in order, as this change reads the
// journal (its own entries not included). What must cover every entry
// made before a time, once and for all, reads them here: an entry
// committed after this change is never older than this change's own
// (entry times never go backwards). Entries moved to an archive are
// ErrArchived.
func (w *Writer) Journal(f JournalFilter) ([]Entry, error) {
	tx := w.tx
	b, ok, err := boundaryOf(tx)
	if err != nil {
		return nil, err
	}
	if ok {
		tx = &joinedTx{Tx: tx, bound: b}
	}
	return journal(tx, f)
}

// journal lists the entries f selects, in order, as tx reads them.
func journal(tx Tx, f JournalFilter) ([]Entry, error) {
	var out []Entry
	var first, last uint64 = 1, ^uint64(0)
	if !f.From.IsZero() {
		s, err := seqAtOrBefore(tx, stamp(f.From).Add(-time.Microsecond))
		if err != nil {
			return nil, err
		}
		first = s + 1
	}
	if !f.To.IsZero() {
		s, err := seqAtOrBefore(tx, stamp(f.To).Add(-time.Microsecond))
		if err != nil {
			return nil, err
		}
		last = s
	}
	terms := f.indexTerms()
	if terms == nil {
		if f.Limit > 0 && len(f.Kinds) == 0 {
			head, err := tx.Head()
			if err != nil {
				return nil, err
			}
			last = min(last, head.Seq)
			first = max(first, last-min(last, uint64(f.Limit))+1)
		}
		err := f.scan(tx, first, last, func(e Entry) {
			if f.matches(e) {
				out = append(out, e)
			}
		})
		if f.Limit > 0 && len(out) > f.Limit {
			out = out[len(out)-f.Limit:]
		}
		return out, err
	}
	// Each term's entries, newest first when only the last few are
	// asked for, so that they cost the same however long its history.
	for _, term := range terms {
		var found []Entry
		err := eachNodeEntry(tx, term, first, last, f.Limit > 0, func(e Entry) (bool, error) {
			if f.matches(e) {
				found = append(found, e)
			}
			return f.Limit == 0 || len(found) < f.Limit, nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[len(out)-f.Limit:]
	}
	return out, nil
}

// indexTerms are the terms of the index that list every entry f may
// select, nil if none does (f is then answered by reading the journal):
// the job's term, else the node's, else each kind's when every kind asked
// for is listed by kind (KindIndexed).
func (f JournalFilter) indexTerms() []string {
	switch {
	case f.Job != "":
		return []string{JobTerm(f.Job)}
	case f.Node != "":
		return []string{f.Node}
	case len(f.Kinds) > 0 && !slices.ContainsFunc(f.Kinds, func(k Kind) bool { return !KindIndexed(k) }):
		terms := make([]string, len(f.Kinds))
		for i, k := range f.Kinds {
			terms[i] = KindTerm(k)
		}
		slices.Sort(terms)
		return slices.Compact(terms)
	}
	return nil
}

// eachNodeEntry is EachEntry over the entries that concern node.
func eachNodeEntry(tx Tx, node string, from, to uint64, reverse bool, fn func(Entry) (bool, error)) error {
	return tx.NodeEntries(node, from, to, reverse, func(se StoredEntry) (bool, error) {
		e, err := DecodeEntry(se)
		if err != nil {
			return false, err
		}
		return fn(e)
	})
}

// scan calls fn with the entries from..to that may match f, decoded on
// the machine's other cores (package ahead). An entry whose bytes lack
// the kinds f asks for (as they are in a binary body, in JSON with their
// key in a JSON one) is not decoded: a filter by the kinds of jobs' entries
// (which the index does not list: KindIndexed) reads the whole journal,
// but decodes only what it may show.
func (f JournalFilter) scan(tx Tx, from, to uint64, fn func(Entry)) error {
	var kinds [2][][]byte // in a binary body, in a JSON one
	for _, k := range f.Kinds {
		kind, _ := json.Marshal(k)
		kinds[0] = append(kinds[0], []byte(k))
		kinds[1] = append(kinds[1], append([]byte(`"kind":`), kind...))
	}
	mayMatch := func(body []byte) bool {
		layout := 1
		if binaryBody(body) {
			layout = 0
		}
		return kinds[layout] == nil || slices.ContainsFunc(kinds[layout], func(k []byte) bool { return bytes.Contains(body, k) })
	}
	type read struct {
		e    Entry
		skip bool
		err  error
	}
	return ahead.Map(func(yield func(StoredEntry) (bool, error)) error { return tx.Entries(from, to, yield) },
		func(se StoredEntry) read {
			if !mayMatch(se.Body) {
				return read{skip: true}
			}
			e, err := DecodeEntry(se)
			return read{e: e, err: err}
		},
		func(r read) (bool, error) {
			if r.err == nil && !r.skip {
				fn(r.e)
			}
			return r.err == nil, r.err
		})
}

func (f JournalFilter) matches(e Entry) bool {
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, e.Kind) {
		return false
	}
	if f.Job != "" {
		job := e.Job()
		if job == nil || job.JobID != f.Job || f.Machine != "" && job.Machine != f.Machine {
			return false
		}
	}
	return f.Node == "" || slices.Contains(IndexTerms(e), f.Node)
}

// ParseKind checks a journal entry kind given by name.
func ParseKind(s string) (Kind, error) {
	if k := Kind(s); slices.Contains(Kinds, k) {
		return k, nil
	}
	return "", fmt.Errorf("%w: unknown journal entry kind %s (one of %v)", ErrInvalid, Excerpt(s), Kinds)
}
