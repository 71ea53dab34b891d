package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/digest"
	"github.com/ingot-hpc/ingot/internal/mailtest"
)

// hookReceiver is a webhook's receiver: it checks each POST's signature
// and keeps the bodies.
type hookReceiver struct {
	t      *testing.T
	secret []byte
	mu     sync.Mutex
	got    []digest.WebhookBody
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if got, want := r.Header.Get(digest.SignatureHeader), digest.Sign(h.secret, body); got != want {
		h.t.Errorf("webhook signature %q, want %q", got, want)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var b digest.WebhookBody
	if err := json.Unmarshal(body, &b); err != nil || b.Text == "" {
		h.t.Errorf("webhook body %s: %v (want a text field)", body, err)
	}
	h.mu.Lock()
	h.got = append(h.got, b)
	h.mu.Unlock()
}

func (h *hookReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.got)
}

// waitLog waits up to 15 seconds for the server's log to hold what.
func waitLog(t *testing.T, p *serverProcess, what string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(p.log); strings.Contains(string(b), what) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's log does not say %s:\n%s", what, p.logTail())
		}
	}
}

// TestDigestsEndToEnd: ingot serve --notify-at mails each person the
// digest of what they may read through a real mail server (Exim, over
// STARTTLS, with AUTH PLAIN) and posts a signed webhook, once; a restart sends nothing
// again; a mail server that never answers is retried and logged while the
// bank answers, and what it did not take is sent at the next run.
func TestDigestsEndToEnd(t *testing.T) {
	mail := mailtest.Start(t)
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("account", "create", "bio")
	for _, p := range []string{"chem.lab1", "chem.lab2", "bio.lab1"} {
		b.ok("project", "create", p)
	}
	b.ok("machine", "add", "hpc1", "--cores", "32")
	hooks := &hookReceiver{t: t, secret: []byte("a webhook secret of the site's")}
	receiver := httptest.NewServer(hooks)
	defer receiver.Close()
	for _, u := range []struct{ name, membership, node string }{
		{"amy", "--member", "chem.lab1"}, {"carl", "--member", "chem.lab2"}, {"cara", "--manager", "chem"},
		{"bob", "--member", "bio.lab1"}, {"dave", "--member", "bio.lab1"},
	} {
		b.ok("user", "add", u.name, u.membership, u.node)
		b.ok("user", "modify", u.name, "--email", u.name+"@example.org")
	}
	b.ok("user", "modify", "cara", "--webhook", receiver.URL+"/hooks/cara")
	b.ok("user", "modify", "bob", "--notify", "off")
	b.ok("deposit", "chem", "1000", "--end", time.Now().Add(10*24*time.Hour).UTC().Format(time.RFC3339))
	b.ok("deposit", "bio", "1000")
	b.ok("charge", "j1", "--machine", "hpc1", "--user", "amy", "--project", "chem.lab1", "--procs", "1", "--wallclock-used", "950")
	admin := filepath.Join(t.TempDir(), "admin.key")
	b.ok("client", "add", "root", "--role", "admin", "--key-out", admin)
	secret := filepath.Join(t.TempDir(), "webhook.secret")
	if err := os.WriteFile(secret, hooks.secret, 0o600); err != nil {
		t.Fatal(err)
	}
	password := filepath.Join(t.TempDir(), "smtp.password")
	if err := os.WriteFile(password, []byte(mailtest.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	settings := []string{"--notify-at", "03:00", "--smtp-from", "bank@example.org", "--smtp-ca-file", mail.CAFile,
		"--smtp-user", mailtest.User, "--smtp-password-file", password,
		"--webhook-secret-file", secret, "--notify-admin", "ops@example.org"}

	p := startServer(t, b.db, append(settings, "--smtp-server", mail.Addr)...)
	ms := mail.WaitMessages(t, 4)
	byTo := map[string]mailtest.Message{}
	for _, m := range ms {
		byTo[m.To] = m
		if host, _ := os.Hostname(); !strings.Contains(m.Header.Get("Received"), "esmtpsa ") || !strings.Contains(m.Header.Get("Received"), "helo="+host) {
			t.Errorf("the message to %s did not come over TLS, authenticated: %s", m.To, m.Header.Get("Received"))
		}
	}
	for to, want := range map[string]struct{ has, hasNot []string }{
		"amy@example.org":  {[]string{"chem.lab1 has 50.00 left", "allocation 1 of chem"}, []string{"chem.lab2", "bio"}},
		"carl@example.org": {[]string{"chem.lab2 has 50.00 left", "allocation 1 of chem"}, []string{"chem.lab1", "bio"}},
		"cara@example.org": {[]string{"chem has 50.00 left", "chem.lab1", "chem.lab2"}, []string{"bio"}},
		"ops@example.org":  {[]string{"chem has 50.00 left", "allocation 1 of chem"}, []string{"chem.lab1", "chem.lab2"}},
	} {
		m, ok := byTo[to]
		if !ok {
			t.Errorf("no digest for %s; got %d messages", to, len(ms))
			continue
		}
		for _, s := range want.has {
			if !strings.Contains(m.Body, s) {
				t.Errorf("%s's digest does not say %q:\n%s", to, s, m.Body)
			}
		}
		for _, s := range want.hasNot {
			if strings.Contains(m.Body, s) {
				t.Errorf("%s's digest tells of %q, not theirs:\n%s", to, s, m.Body)
			}
		}
	}
	waitLog(t, p, `"msg":"digests","sent":5`)
	if n := hooks.count(); n != 1 || !strings.Contains(hooks.got[0].Text, "chem.lab2") || hooks.got[0].User != "cara" {
		t.Errorf("webhooks: %d received, want cara's once: %+v", n, hooks.got)
	}

	// A restart sends nothing again.
	p.stop()
	p = startServer(t, b.db, append(settings, "--smtp-server", mail.Addr)...)
	waitLog(t, p, `"msg":"digests","sent":0,"due":0`)
	// What ingot-notify.timer runs: the server sends, with its settings.
	if out := (&cliBank{t: t, global: []string{"--server", p.url, "--key-file", admin}}).ok("notify", "--dry-run"); !strings.Contains(out, "no digest is due") {
		t.Errorf("ingot notify --dry-run through the server after a restart:\n%s", out)
	}
	p.stop()
	if n, h := len(mail.Messages(t)), hooks.count(); n != 4 || h != 1 {
		t.Errorf("after a restart: %d messages, %d webhooks; want 4 and 1", n, h)
	}

	// dave's project is low; the mail server accepts connections and never
	// answers: each attempt times out, is logged, and the bank answers
	// meanwhile.
	b.ok("charge", "j2", "--machine", "hpc1", "--user", "dave", "--project", "bio.lab1", "--procs", "1", "--wallclock-used", "990")
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, unanswered, until the test ends
		}
	}()
	p = startServer(t, b.db, append(settings, "--smtp-server", hole.Addr().String(), "--smtp-timeout", "1500ms",
		"--notify-attempts", "2", "--notify-retry-wait", "100ms")...)
	waitLog(t, p, `"msg":"digest not delivered","to":"user/dave/email","address":"dave@example.org","attempt":1`)
	start := time.Now()
	remote := &cliBank{t: t, global: []string{"--server", p.url, "--key-file", admin}}
	if out := remote.ok("balance", "bio", "-P"); !strings.Contains(out, "bio|") {
		t.Errorf("balance while the mail server hangs:\n%s", out)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a balance took %s while the digests waited for the mail server", d)
	}
	waitLog(t, p, `"attempt":2,"of":2`)
	waitLog(t, p, `"msg":"digests","sent":0,"due":1,"error"`)
	p.stop()

	// Not recorded: the next run, with the mail server back, sends it.
	out := b.ok("notify", "-P", "--smtp-server", mail.Addr, "--smtp-ca-file", mail.CAFile, "--smtp-from", "bank@example.org", "--notify-admin", "ops@example.org")
	if !strings.Contains(out, "\nuser/dave/email|dave@example.org|2|yes|\n") || strings.Contains(out, "ops@") {
		t.Errorf("ingot notify after the mail server came back:\n%s", out)
	}
	ms = mail.WaitMessages(t, 5)
	for _, m := range ms {
		if m.To == "dave@example.org" && (!strings.Contains(m.Body, "bio.lab1 has 10.00 left") || strings.Contains(m.Body, "chem")) {
			t.Errorf("dave's digest:\n%s", m.Body)
		}
	}
	if out := b.ok("notify", "--dry-run", "--smtp-server", mail.Addr, "--notify-admin", "ops@example.org"); !strings.Contains(out, "no digest is due") {
		t.Errorf("a dry run after every digest was sent:\n%s", out)
	}
}
