package digest_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/digest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
	"github.com/ingot-hpc/ingot/lien"
)

// outbox is a Sender that keeps what it is given, or fails while fail is
// set.
type outbox struct {
	mu   sync.Mutex
	got  []digest.Digest
	fail error
	slow time.Duration // each delivery takes this long
}

func (o *outbox) Send(_ context.Context, d digest.Digest) error {
	time.Sleep(o.slow)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fail != nil {
		return o.fail
	}
	o.got = append(o.got, d)
	return nil
}

// take is what was sent since the last take, by recipient key.
func (o *outbox) take() map[string]digest.Digest {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]digest.Digest{}
	for _, d := range o.got {
		out[d.To.Key()] = d
	}
	o.got = nil
	return out
}

// bank is chem (chem.lab1 of amy, chem.lab2 of carl, managed by cara) and
// bio (bio.lab1 of bob, who opted out), with 1000 each; chem's allocation
// ends in 20 days. Its notifier mails users and the admin ops@, and posts
// cara's webhook.
type bank struct {
	*ledgertest.Bank
	lb   *lien.Bank
	n    *digest.Notifier
	mail *outbox
	hook *outbox
	log  *bytes.Buffer
}

func newBank(t *testing.T) *bank { return newBankOn(t, bolttest.Open) }

func newBankOn(t *testing.T, open ledgertest.OpenStore) *bank {
	b := &bank{Bank: ledgertest.NewBank(t, open), mail: &outbox{}, hook: &outbox{}, log: &bytes.Buffer{}}
	b.lb = lien.New(b.Ledger)
	ctx := context.Background()
	b.MustNode("chem", "chem.lab1", "chem.lab2", "bio", "bio.lab1")
	if _, err := b.AddMachine(ctx, b.Req(), ledger.MachineSpec{Name: "hpc1", Shape: ledger.Shape{Cores: 32}}); err != nil {
		t.Fatal(err)
	}
	cs := digest.NewContacts(b.Ledger)
	for _, u := range []struct {
		name, node string
		role       ledger.Role
		ch         digest.ContactChange
	}{
		{"amy", "chem.lab1", ledger.RoleMember, digest.ContactChange{Email: ptr("amy@example.org")}},
		{"carl", "chem.lab2", ledger.RoleMember, digest.ContactChange{Email: ptr("carl@example.org")}},
		{"cara", "chem", ledger.RoleManager, digest.ContactChange{Email: ptr("cara@example.org"), Webhook: ptr("https://chat.example.org/cara")}},
		{"bob", "bio.lab1", ledger.RoleMember, digest.ContactChange{Email: ptr("bob@example.org"), Off: ptr(true)}},
	} {
		if _, err := b.AddUser(ctx, b.Req(), ledger.UserSpec{Name: u.name, Memberships: []ledger.Membership{{Node: u.node, Role: u.role}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.Set(ctx, b.Req(), u.name, u.ch); err != nil {
			t.Fatal(err)
		}
	}
	b.MustDeposit("chem", "1000", b.Clock.Now().Add(20*24*time.Hour))
	b.MustDeposit("bio", "1000", time.Time{})
	b.n = &digest.Notifier{Ledger: b.Ledger, Rules: digest.DefaultRules, Admins: []string{"ops@example.org"},
		Senders: map[digest.Channel]digest.Sender{digest.Email: b.mail, digest.Webhook: b.hook}, Attempts: 2, Backoff: time.Millisecond,
		Log: slog.New(slog.NewJSONHandler(b.log, nil))}
	return b
}

func ptr[T any](v T) *T { return &v }

// spend charges a job of chem.lab1 (amy's) or another project credits.
func (b *bank) spend(t *testing.T, project, job string, credits int64) {
	t.Helper()
	_, err := b.lb.Charge(context.Background(), b.Req(), lien.ChargeSpec{Job: lien.Job{Machine: "hpc1", ID: job}, User: "amy", Project: project,
		Usage: charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: credits, State: charge.Completed}})
	if err != nil {
		t.Fatal(err)
	}
}

func (b *bank) run(t *testing.T) []digest.Digest {
	t.Helper()
	ds, err := b.n.Run(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// keys are the condition keys of d, sorted.
func keys(d digest.Digest) []string {
	var out []string
	for _, c := range d.Conditions {
		out = append(out, c.Key())
	}
	slices.Sort(out)
	return out
}

func wantKeys(t *testing.T, got map[string]digest.Digest, want map[string][]string) {
	t.Helper()
	for k, d := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s was sent %v; want nothing", k, keys(d))
		}
	}
	for k, w := range want {
		d, ok := got[k]
		if !ok {
			t.Errorf("%s was sent nothing; want %v", k, w)
			continue
		}
		if g := keys(d); !slices.Equal(g, w) {
			t.Errorf("%s was sent %v; want %v\n%s", k, g, w, d.Text)
		}
	}
}

// TestDigests: each recipient is told what it may read, once; what lasts
// is not told again the next day, but is when it worsens and after a
// week; an expired lien is told once; a dry run records nothing.
func TestDigests(t *testing.T) { testDigests(t, newBank(t)) }

// TestDigestsOnPostgres: the same on a PostgreSQL bank.
func TestDigestsOnPostgres(t *testing.T) { testDigests(t, newBankOn(t, pgstoretest.Open)) }

func testDigests(t *testing.T, b *bank) {
	if ds := b.run(t); len(ds) != 0 {
		t.Fatalf("a bank with nothing to tell sent %d digests: %+v", len(ds), ds)
	}
	b.Clock.Advance(10 * 24 * time.Hour) // chem's allocation ends in 10 days
	b.spend(t, "chem.lab1", "j1", 950)   // 50 left: 5%, and at 950 / 30 days gone in 1.6 days
	lab1 := []string{"ending/chem/1", "low/chem.lab1", "runway/chem.lab1"}
	lab2 := []string{"ending/chem/1", "low/chem.lab2"} // no use: no run-out date
	all := []string{"ending/chem/1", "low/chem", "low/chem.lab1", "low/chem.lab2", "runway/chem", "runway/chem.lab1"}
	admin := []string{"ending/chem/1", "low/chem", "runway/chem"}

	journal := b.JournalLen()
	plan, err := b.n.Run(context.Background(), true)
	if err != nil || len(plan) != 5 || b.JournalLen() != journal || len(b.mail.take())+len(b.hook.take()) != 0 {
		t.Fatalf("dry run: %d digests, err %v, journal %d → %d; want 5 planned, nothing sent or journaled", len(plan), err, journal, b.JournalLen())
	}
	b.run(t)
	wantKeys(t, b.mail.take(), map[string][]string{"user/amy/email": lab1, "user/carl/email": lab2, "user/cara/email": all, "admin/email/ops@example.org": admin})
	hooks := b.hook.take()
	wantKeys(t, hooks, map[string][]string{"user/cara/webhook": all})
	if d := hooks["user/cara/webhook"]; !strings.Contains(d.Text, "allocation 1 of chem (50.00 left of 1000.00) ends on") || !strings.Contains(d.Text, "no allocation follows it") {
		t.Errorf("cara's digest:\n%s", d.Text)
	}

	// Once a period: nothing again now, nor tomorrow while nothing worsens.
	if ds := b.run(t); len(ds) != 0 {
		t.Errorf("a second run in the period sent %d digests", len(ds))
	}
	b.Clock.Advance(24 * time.Hour)
	if ds := b.run(t); len(ds) != 0 {
		t.Errorf("the next day, nothing worse: %d digests: %v", len(ds), keys(ds[0]))
	}

	// Worse: 1% left, run out sooner; amy's lien expires unsettled.
	b.spend(t, "chem.lab1", "j2", 40)
	if _, err := b.lb.Place(context.Background(), b.Req(), lien.PlaceSpec{Job: lien.Job{Machine: "hpc1", ID: "j3"}, User: "amy", Project: "chem.lab1",
		Request: charge.Request{Resources: charge.Resources{Processors: 1}, WallclockLimitSeconds: 5}}); err != nil {
		t.Fatal(err)
	}
	b.Clock.Advance(24 * time.Hour)
	if _, err := b.lb.Sweep(context.Background(), b.Req()); err != nil {
		t.Fatal(err)
	}
	b.run(t)
	expired := "lien-expired/chem.lab1/1"
	wantKeys(t, b.mail.take(), map[string][]string{"user/amy/email": {expired, "low/chem.lab1", "runway/chem.lab1"}, "user/carl/email": {"low/chem.lab2"},
		"user/cara/email":             {expired, "low/chem", "low/chem.lab1", "low/chem.lab2", "runway/chem", "runway/chem.lab1"},
		"admin/email/ops@example.org": {expired, "low/chem", "runway/chem"}})
	b.hook.take()

	// A week after it was first told, what lasts is told again; the
	// expired lien is not.
	b.Clock.Advance(7 * 24 * time.Hour)
	b.run(t)
	wantKeys(t, b.mail.take(), map[string][]string{"user/amy/email": lab1, "user/carl/email": lab2, "user/cara/email": all, "admin/email/ops@example.org": admin})
	b.MustAudit()
}

// TestUndeliveredIsRetried: a digest that cannot be delivered is logged,
// not recorded, and sent at the next run; the others are not held up.
func TestUndeliveredIsRetried(t *testing.T) {
	b := newBank(t)
	b.Clock.Advance(10 * 24 * time.Hour)
	b.mail.fail = errors.New("connection refused")
	ds, err := b.n.Run(context.Background(), false)
	if !errors.Is(err, digest.ErrDelivery) {
		t.Fatalf("run with the mail server away: %v", err)
	}
	for _, d := range ds {
		if d.To.Channel == digest.Email && (d.Sent || d.Error == "") || d.To.Channel == digest.Webhook && !d.Sent {
			t.Errorf("%s: sent %v, error %q", d.To.Key(), d.Sent, d.Error)
		}
	}
	if n := strings.Count(b.log.String(), `"msg":"digest not delivered"`); n != 2*4 {
		t.Errorf("logged %d failed attempts, want 8 (2 each of 4 recipients):\n%s", n, b.log)
	}
	b.mail.fail = nil
	b.run(t)
	wantKeys(t, b.mail.take(), map[string][]string{"user/amy/email": {"ending/chem/1"}, "user/carl/email": {"ending/chem/1"},
		"user/cara/email": {"ending/chem/1"}, "admin/email/ops@example.org": {"ending/chem/1"}})
	if got := b.hook.take(); len(got) != 1 {
		t.Errorf("webhooks: %d sent, want cara's once", len(got))
	}
	b.MustAudit()
}

// TestTwoRunsSendOnce: two runs at once (two servers of one bank) each
// plan every digest, and each recipient is sent one: the run that finds a
// recipient claimed leaves it.
func TestTwoRunsSendOnce(t *testing.T) {
	b := newBank(t)
	b.Clock.Advance(10 * 24 * time.Hour)
	b.mail.slow, b.hook.slow = 20*time.Millisecond, 20*time.Millisecond
	other := *b.n
	var handled [2][]digest.Digest
	var wg sync.WaitGroup
	for i, n := range []*digest.Notifier{b.n, &other} {
		wg.Go(func() {
			ds, err := n.Run(context.Background(), false)
			if err != nil {
				t.Error(err)
			}
			handled[i] = ds
		})
	}
	wg.Wait()
	if n := len(handled[0]) + len(handled[1]); n != 5 {
		t.Errorf("the two runs handled %d digests, want 5 in all", n)
	}
	wantKeys(t, b.mail.take(), map[string][]string{"user/amy/email": {"ending/chem/1"}, "user/carl/email": {"ending/chem/1"},
		"user/cara/email": {"ending/chem/1"}, "admin/email/ops@example.org": {"ending/chem/1"}})
	if got := b.hook.take(); len(got) != 1 {
		t.Errorf("webhooks: %d sent, want cara's once", len(got))
	}
	b.MustAudit()
}
