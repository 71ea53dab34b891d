package digest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// Actor is who the records of digests sent are journaled as.
const Actor = "notify"

// stateKind is the kind of the records that say what each recipient was
// told, and when.
const stateKind = "digest"

// Rules say what is worth telling, and how often.
type Rules struct {
	// LowPercent: a node with less available than this percent of what
	// its account's active allocations were given is low.
	LowPercent decimal.Decimal
	// RunwayDays: a node whose credits run out within this many days at
	// the last 30 days' rate is told so.
	RunwayDays int
	// EndingDays: an allocation that ends within this many days is told.
	EndingDays int
	// Period: at most one digest a recipient in a period (less an hour's
	// slack, or a twentieth of it if shorter, so that a daily run whose
	// start drifts by seconds is not put off a day).
	Period time.Duration
	// Repeat: a condition that lasts, unchanged, is told again after this.
	Repeat time.Duration
}

// DefaultRules are the rules without settings.
var DefaultRules = Rules{LowPercent: decimal.NewFromInt(10), RunwayDays: 14, EndingDays: 14, Period: 24 * time.Hour, Repeat: 7 * 24 * time.Hour}

// check refuses rules that cannot be.
func (r Rules) check() error {
	switch {
	case !r.LowPercent.IsPositive() || r.LowPercent.GreaterThan(hundred):
		return fmt.Errorf("%w: low percent %s: want more than 0, at most 100", ErrInvalid, r.LowPercent)
	case r.RunwayDays < 1 || r.EndingDays < 1:
		return fmt.Errorf("%w: runway days %d, ending days %d: want 1 or more", ErrInvalid, r.RunwayDays, r.EndingDays)
	case r.Period < time.Minute || r.Repeat < r.Period:
		return fmt.Errorf("%w: period %s, repeat %s: want a period of a minute or more, and a repeat no shorter", ErrInvalid, r.Period, r.Repeat)
	}
	return nil
}

// slack is how much sooner than a period after the last a digest may go.
func (r Rules) slack() time.Duration { return min(time.Hour, r.Period/20) }

// Channel is how a digest is delivered.
type Channel string

// The channels.
const (
	Email   Channel = "email"
	Webhook Channel = "webhook"
)

// Recipient is one destination of digests: a bank user's email address or
// webhook, or an admin's. Each has its own record of what it was told.
type Recipient struct {
	// User is the bank user; "" for an admin (the bank's digest).
	User    string  `json:"user,omitempty"`
	Channel Channel `json:"channel"`
	Address string  `json:"address"`
	roots   []string
}

// Key names the recipient's record: the user and channel (an admin's by
// its address), so that a new address does not start over.
func (r Recipient) Key() string {
	if r.User == "" {
		return "admin/" + string(r.Channel) + "/" + r.Address
	}
	return "user/" + r.User + "/" + string(r.Channel)
}

// name is how a digest addresses the recipient.
func (r Recipient) name() string {
	if r.User == "" {
		return "the bank's admins"
	}
	return r.User
}

// sees reports whether the recipient is told c: an admin every account's
// condition and every expired lien; a user those of the subtrees of the
// nodes it is a member or manager of, and of the allocations of their
// accounts (which fund its projects), never another project's.
func (r Recipient) sees(c Condition) bool {
	if r.User == "" {
		return c.Kind == LienExpired || ledger.AccountOf(c.Node) == c.Node
	}
	for _, root := range r.roots {
		if ledger.InSubtree(c.Node, root) || (c.Kind == Ending || c.Kind == Exhausted) && c.Node == ledger.AccountOf(root) {
			return true
		}
	}
	return false
}

// Digest is one message: what is new for a recipient.
type Digest struct {
	To         Recipient   `json:"to"`
	Since      time.Time   `json:"since,omitzero"` // the last digest sent it
	Conditions []Condition `json:"conditions"`
	Subject    string      `json:"subject"`
	Text       string      `json:"text"`
	// Sent says whether it was delivered and recorded (not on a dry run);
	// Error why not.
	Sent  bool   `json:"sent"`
	Error string `json:"error,omitempty"`
	// prev is the recipient's record as this run read it; state what it
	// becomes once the digest is delivered. run names the run that sends
	// it, in the request ids of its records.
	prev, state state
	run         string
}

// state is a recipient's record: when it was last sent a digest, and the
// conditions it was told that still hold, by key.
type state struct {
	Last time.Time       `json:"last,omitzero"`
	Told map[string]told `json:"told,omitempty"`
	// Claimed is when a run began to deliver a digest to the recipient:
	// another run (another server of the bank) leaves the recipient alone
	// for claimLease after it.
	Claimed time.Time `json:"claimed,omitzero"`
}

// claimLease is how long a run's claim on a recipient holds: longer than
// any delivery with its attempts takes. A run that died delivering (its
// digest perhaps sent, not recorded) is replaced by the first run after
// it: at least once.
const claimLease = time.Hour

type told struct {
	Level int       `json:"level"`
	At    time.Time `json:"at"`
}

// Sender delivers a digest on one channel.
type Sender interface {
	Send(ctx context.Context, d Digest) error
}

// Notifier makes the bank's digests and delivers them.
type Notifier struct {
	Ledger *ledger.Ledger
	Rules  Rules
	// Admins are the email addresses of the bank's digest; AdminWebhook
	// its webhook.
	Admins       []string
	AdminWebhook string
	// Senders deliver by channel; a recipient whose channel has none is
	// left out (no mail server set: no email).
	Senders map[Channel]Sender
	// Attempts is how many times a delivery is tried (at least once),
	// Backoff the wait before the second, doubled after each.
	Attempts int
	Backoff  time.Duration
	Log      *slog.Logger
}

// recipients are the bank's recipients now: each active user with a
// contact not opted out and a channel to reach it by, then the admins.
func (n *Notifier) recipients(ctx context.Context) ([]Recipient, error) {
	contacts, err := NewContacts(n.Ledger).List(ctx)
	if err != nil {
		return nil, err
	}
	users, err := n.Ledger.Users(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]ledger.User{}
	for _, u := range users {
		byName[u.Name] = u
	}
	var out []Recipient
	add := func(r Recipient) {
		if n.Senders[r.Channel] != nil && r.Address != "" {
			out = append(out, r)
		}
	}
	for _, c := range contacts {
		u, ok := byName[c.User]
		if !ok || !u.Active || c.Off {
			continue
		}
		var roots []string
		for _, m := range u.Memberships {
			roots = append(roots, m.Node)
		}
		add(Recipient{User: u.Name, Channel: Email, Address: c.Email, roots: roots})
		add(Recipient{User: u.Name, Channel: Webhook, Address: c.Webhook, roots: roots})
	}
	for _, a := range n.Admins {
		add(Recipient{Channel: Email, Address: a})
	}
	add(Recipient{Channel: Webhook, Address: n.AdminWebhook})
	return out, nil
}

func (n *Notifier) states(ctx context.Context) (map[string]state, error) {
	out := map[string]state{}
	err := n.Ledger.View(ctx, func(tx ledger.Tx) error {
		recs, err := tx.Records(stateKind)
		if err != nil {
			return err
		}
		for _, r := range recs {
			s, err := decodeState(r)
			if err != nil {
				return err
			}
			out[r.Key] = s
		}
		return nil
	})
	return out, err
}

func decodeState(r ledger.Record) (state, error) {
	var s state
	if err := json.Unmarshal(r.Value, &s); err != nil {
		return state{}, fmt.Errorf("%w: digest record %s: %v", ledger.ErrCorrupt, r.Key, err)
	}
	return s, nil
}

// Plan is the digests due now, one a recipient at most, each with only
// what it was not told (the rule: package doc). It changes nothing.
func (n *Notifier) Plan(ctx context.Context) ([]Digest, error) {
	if err := n.Rules.check(); err != nil {
		return nil, err
	}
	now := n.Ledger.Now()
	rs, err := n.recipients(ctx)
	if err != nil {
		return nil, err
	}
	states, err := n.states(ctx)
	if err != nil {
		return nil, err
	}
	// Events of the last Repeat at most: a recipient never told is told
	// those of the last period.
	conds, err := conditions(ctx, n.Ledger, n.Rules, now.Add(-n.Rules.Repeat))
	if err != nil {
		return nil, err
	}
	var out []Digest
	for _, r := range rs {
		st := states[r.Key()]
		if !st.Last.IsZero() && now.Before(st.Last.Add(n.Rules.Period-n.Rules.slack())) {
			continue // told within the period
		}
		if !st.Claimed.IsZero() && now.Before(st.Claimed.Add(claimLease)) {
			continue // another run is delivering
		}
		since := st.Last
		if since.IsZero() {
			since = now.Add(-n.Rules.Period)
		}
		d := Digest{To: r, Since: st.Last, prev: st, state: state{Last: now, Told: map[string]told{}}}
		for _, c := range conds {
			if !r.sees(c) {
				continue
			}
			if c.event() {
				if c.At.After(since) {
					d.Conditions = append(d.Conditions, c)
				}
				continue
			}
			prev, toldBefore := st.Told[c.Key()]
			if !toldBefore || c.Level > prev.Level || !now.Before(prev.At.Add(n.Rules.Repeat)) {
				d.Conditions = append(d.Conditions, c)
				prev = told{Level: c.Level, At: now}
			}
			d.state.Told[c.Key()] = prev
		}
		if len(d.Conditions) > 0 {
			d.Subject, d.Text = compose(d)
			out = append(out, d)
		}
	}
	return out, nil
}

// Run makes the digests due now and, unless dryRun, delivers each and
// records it as sent (a restart then sends it again only if the record
// was not made: at least once). Each is claimed first, in the recipient's
// record, so that two runs at once (two servers of one bank) send it
// once: the one that finds it claimed, or already sent, leaves it. A
// digest not delivered after its attempts is logged, not recorded (its
// claim is let go), and tried again at the next run; the others go on.
// The digests this run handled are returned, with what became of each.
func (n *Notifier) Run(ctx context.Context, dryRun bool) ([]Digest, error) {
	ds, err := n.Plan(ctx)
	if err != nil || dryRun {
		return ds, err
	}
	out, run := ds[:0], rand.Text()
	var errs []error
	for _, d := range ds {
		d.run = run
		claimed := d.prev
		claimed.Claimed = d.state.Last
		ok, err := n.write(ctx, d, d.prev, claimed, "claimed")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			n.log().Info("digest left to another run", "to", d.To.Key())
			continue
		}
		if d.Sent, err = n.send(ctx, d, claimed); err != nil {
			d.Error = err.Error()
			errs = append(errs, err)
		}
		out = append(out, d)
	}
	return out, errors.Join(errs...)
}

// send delivers d, claimed, and records it as sent; or lets the claim go
// if it cannot be delivered.
func (n *Notifier) send(ctx context.Context, d Digest, claimed state) (bool, error) {
	if err := n.deliver(ctx, d); err != nil {
		if _, rerr := n.write(context.WithoutCancel(ctx), d, claimed, d.prev, "released"); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return false, err
	}
	ok, err := n.write(context.WithoutCancel(ctx), d, claimed, d.state, "sent")
	if err != nil {
		return false, err
	}
	if !ok {
		n.log().Warn("digest sent, but another run took the recipient over meanwhile (the claim outlived)", "to", d.To.Key())
	}
	n.log().Info("digest sent", "to", d.To.Key(), "address", d.To.Address, "conditions", len(d.Conditions))
	return true, nil
}

func (n *Notifier) log() *slog.Logger {
	if n.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return n.Log
}

// deliver tries the digest's sender Attempts times, waiting Backoff and
// then twice as long each time, logging each failure.
func (n *Notifier) deliver(ctx context.Context, d Digest) error {
	wait := n.Backoff
	var err error
	for attempt := 1; attempt <= max(1, n.Attempts); attempt++ {
		if attempt > 1 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w to %s: %w", ErrDelivery, d.To.Key(), ctx.Err())
			case <-time.After(wait):
			}
			wait *= 2
		}
		if err = n.Senders[d.To.Channel].Send(ctx, d); err == nil {
			return nil
		}
		n.log().Warn("digest not delivered", "to", d.To.Key(), "address", d.To.Address, "attempt", attempt, "of", max(1, n.Attempts), "error", err.Error())
	}
	return fmt.Errorf("%w to %s (%s) after %d attempts: %w", ErrDelivery, d.To.Key(), d.To.Address, max(1, n.Attempts), err)
}

// write makes the recipient's record to, in one change, if it is still
// from (as this run read or left it); ok false when another run changed
// it meanwhile. The journal entry says what: the digest claimed, sent
// (with the conditions told), or released.
func (n *Notifier) write(ctx context.Context, d Digest, from, to state, what string) (ok bool, err error) {
	key := d.To.Key()
	b, err := json.Marshal(to)
	if err != nil {
		return false, fmt.Errorf("digest: encode the record of %s: %w", key, err)
	}
	req := ledger.Request{Actor: Actor, ID: "digest/" + key + "/" + d.run + "/" + what}
	ok, err = ledger.Mutate(ctx, n.Ledger, req, ledger.KindRecord, struct {
		Key   string          `json:"key"`
		State json.RawMessage `json:"state"`
	}{key, b}, func(w *ledger.Writer) (bool, error) {
		var cur state
		if r, found, err := w.Tx().Record(stateKind, key); err != nil {
			return false, err
		} else if found {
			if cur, err = decodeState(r); err != nil {
				return false, err
			}
		}
		if !cur.Last.Equal(from.Last) || !cur.Claimed.Equal(from.Claimed) {
			return false, nil
		}
		desc := "digest " + what
		if what == "sent" {
			var told []string
			for _, c := range d.Conditions {
				told = append(told, c.Key())
			}
			desc += ": " + strings.Join(told, ", ")
		}
		_, err := w.Append(ledger.Entry{Kind: ledger.KindRecord, Ref: key, Description: desc,
			Record: &ledger.Record{Kind: stateKind, Key: key, Value: b}})
		return true, err
	})
	if err != nil {
		return false, fmt.Errorf("digest: record that %s's digest was %s: %w", key, what, err)
	}
	return ok, nil
}

// compose is a digest's subject and text.
func compose(d Digest) (subject, text string) {
	subject = fmt.Sprintf("ingot: %d %s for %s", len(d.Conditions), plural(len(d.Conditions), "change", "changes"), d.To.name())
	var b strings.Builder
	if d.Since.IsZero() {
		fmt.Fprintf(&b, "What the bank has for %s:\n\n", d.To.name())
	} else {
		fmt.Fprintf(&b, "What changed for %s since the last digest (%s):\n\n", d.To.name(), local(d.Since))
	}
	byKind := map[Kind][]Condition{}
	for _, c := range d.Conditions {
		byKind[c.Kind] = append(byKind[c.Kind], c)
	}
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		for _, c := range byKind[k] {
			fmt.Fprintf(&b, "- %s\n", c.Text)
		}
	}
	b.WriteString("\n`ingot balance --forecast` shows the figures now. `ingot user modify NAME --notify off` stops these digests.\n")
	return subject, b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
