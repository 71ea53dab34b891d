package gold_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/gold"
	"github.com/ingot-hpc/ingot/proto/server"
)

// site is a bank with account chem (project chem.lab1 of user amy) and
// account bio, 100000 credits in chem, machines hpc1 and hpc2, and three
// clients: maui (scheduler of hpc1) and staff (admin), whose keys sign
// Gold's messages, and slurm (scheduler of hpc1), whose keys do not; and
// the Gold listener on a loopback port.
type site struct {
	*ledgertest.Bank
	t    *testing.T
	keys map[string]string // a client's key as Gold's auth_key holds it
	addr string
}

func newSite(t *testing.T) *site {
	t.Helper()
	b := ledgertest.NewBank(t, bolttest.Open)
	b.MustNode("chem", "chem.lab1", "bio")
	for _, m := range []string{"hpc1", "hpc2"} {
		if _, err := b.AddMachine(context.Background(), b.Req(), ledger.MachineSpec{Name: m, Shape: ledger.Shape{Cores: 32}}); err != nil {
			t.Fatal(err)
		}
	}
	spec := ledger.UserSpec{Name: "amy", DefaultProject: "chem.lab1", Memberships: []ledger.Membership{{Node: "chem.lab1", Role: ledger.RoleMember}}}
	if _, err := b.AddUser(context.Background(), b.Req(), spec); err != nil {
		t.Fatal(err)
	}
	b.MustDeposit("chem", "100000", time.Time{})
	reg, err := clients.New(b.Ledger, [32]byte{7})
	if err != nil {
		t.Fatal(err)
	}
	s := &site{Bank: b, t: t, keys: map[string]string{}}
	for _, c := range []clients.Spec{
		{Name: "maui", Role: clients.RoleScheduler, Scope: []string{"hpc1"}, Gold: true},
		{Name: "staff", Role: clients.RoleAdmin, Gold: true},
		{Name: "slurm", Role: clients.RoleScheduler, Scope: []string{"hpc1"}},
	} {
		_, key, err := reg.Add(context.Background(), b.Req(), c)
		if err != nil {
			t.Fatal(err)
		}
		s.keys[c.Name] = key.SecretText()
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	api := server.New(b.Ledger, lien.New(b.Ledger), reg, &auth.Verifier{Lookup: server.KeyLookup(reg), Now: b.Clock.Now}, log)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &gold.Server{Handler: &gold.Bank{API: api, Keys: reg, Log: log}, Log: log}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.addr = ln.Addr().String()
	return s
}

// send signs body with the client's key, frames it as Maui does when
// maui is set (else as Gold's client does), and returns the reply's code,
// message and count.
func (s *site) send(client, body string, maui bool) (code, message, count string) {
	s.t.Helper()
	digest, signature := gold.Sign([]byte(s.keys[client]), []byte(body))
	sig := "<Signature><DigestValue>" + digest + "</DigestValue><SignatureValue>" + signature + "</SignatureValue></Signature>"
	payload := `<?xml version="1.0" encoding="UTF-8"?><Envelope>` + body + sig + "</Envelope>"
	head := "POST /SSSRMAP3 HTTP/1.1\r\nContent-Type: text/xml; charset=\"utf-8\"\r\nTransfer-Encoding: chunked\r\n\r\n"
	tail := "0\r\n"
	if maui {
		payload = `<Envelope name="Maui">` + sig + body + "</Envelope>"
		head, tail = strings.Replace(head, "chunked", "chunked;", 1), "\r\n\x00"
	}
	return s.exchange(head + fmt.Sprintf("%X\r\n", len(payload)) + payload + tail)
}

var (
	codeRe    = regexp.MustCompile(`<Code>([^<]*)</Code>`)
	messageRe = regexp.MustCompile(`<Message>([^<]*)</Message>`)
	countRe   = regexp.MustCompile(`<Count>([^<]*)</Count>`)
)

func (s *site) exchange(raw string) (code, message, count string) {
	s.t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		s.t.Fatal(err)
	}
	reply, err := io.ReadAll(c)
	if err != nil {
		s.t.Fatal(err)
	}
	find := func(re *regexp.Regexp) string {
		if m := re.FindSubmatch(reply); m != nil {
			return string(m[1])
		}
		return ""
	}
	return find(codeRe), find(messageRe), find(countRe)
}

func (s *site) entries() int {
	s.t.Helper()
	es, err := s.Journal(context.Background(), ledger.JournalFilter{})
	if err != nil {
		s.t.Fatal(err)
	}
	return len(es)
}

func request(action, object, inner string) string {
	return `<Body><Request action="` + action + `" actor="amy"><Object>` + object + `</Object>` + inner + `</Request></Body>`
}

const reserve4242 = `<Option name="WallDuration">3600</Option><Data><Job><JobId>4242</JobId><MachineName>hpc1</MachineName><Processors>4</Processors><UserId>amy</UserId></Job></Data>`

// TestMauiReservesAndCharges: a job reserved and charged as Maui frames
// its requests, with the numbers ingot's own lien and charge give.
func TestMauiReservesAndCharges(t *testing.T) {
	s := newSite(t)
	if code, msg, count := s.send("maui", request("Reserve", "Job", reserve4242), true); code != "000" || count != "14400" {
		t.Fatalf("reserve: %s %s %s", code, msg, count)
	}
	if b := s.MustBalance("chem"); !b.Reserved.Equal(ledgertest.Dec(t, "14400")) {
		t.Errorf("reserved %s", b.Reserved)
	}
	charge := `<Data><Job><JobId>4242</JobId><MachineName>hpc1</MachineName><Processors>4</Processors><UserId>amy</UserId><WallDuration>1800</WallDuration></Job></Data>`
	if code, msg, count := s.send("maui", request("Charge", "Job", charge), true); code != "000" || count != "7200" {
		t.Fatalf("charge: %s %s %s", code, msg, count)
	}
	// Sent again (a retry), it is the same answer and no second charge.
	if code, _, count := s.send("maui", request("Charge", "Job", charge), true); code != "000" || count != "7200" {
		t.Errorf("charge again: %s %s", code, count)
	}
	if b := s.MustBalance("chem"); !b.Amount.Equal(ledgertest.Dec(t, "92800")) || !b.Reserved.IsZero() {
		t.Errorf("after the charge: amount %s, reserved %s", b.Amount, b.Reserved)
	}
}

// TestRefusals: each refusal has its code and writes nothing.
func TestRefusals(t *testing.T) {
	s := newSite(t)
	signed := func(client, body string) func() (string, string, string) {
		return func() (string, string, string) { return s.send(client, body, false) }
	}
	changed := func() (string, string, string) {
		body := request("Reserve", "Job", reserve4242)
		digest, signature := gold.Sign([]byte(s.keys["maui"]), []byte(body))
		payload := "<Envelope>" + strings.Replace(body, "<Processors>4<", "<Processors>5<", 1) +
			"<Signature><DigestValue>" + digest + "</DigestValue><SignatureValue>" + signature + "</SignatureValue></Signature></Envelope>"
		return s.exchange(fmt.Sprintf("POST /SSSRMAP3 HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s", len(payload), payload))
	}
	big := strings.Replace(reserve4242, ">4<", ">40<", 1)
	cases := []struct {
		name       string
		send       func() (string, string, string)
		code, says string
	}{
		{"changed body", changed, "424", "changed after it was signed"},
		{"not a Gold client", signed("slurm", request("Reserve", "Job", reserve4242)), "424", "--gold"},
		{"other machine", signed("maui", request("Reserve", "Job", strings.Replace(reserve4242, "hpc1", "hpc2", 1))), "444", "not one of its machines"},
		{"insufficient funds", signed("maui", request("Reserve", "Job", strings.Replace(big, "3600", "36000", 1))), "782", "Insufficient balance to reserve job (JobId 4242)"},
		{"unknown user", signed("maui", request("Reserve", "Job", strings.Replace(reserve4242, ">amy<", ">zed<", 1))), "740", "zed"},
		{"no wallclock", signed("maui", request("Reserve", "Job", strings.Replace(reserve4242, `<Option name="WallDuration">3600</Option>`, "", 1))), "314", "WallDuration"},
		{"unread field", signed("maui", request("Reserve", "Job", strings.Replace(reserve4242, "<Processors>", "<Colour>red</Colour><Processors>", 1))), "314", "Colour"},
		{"unimplemented action", signed("staff", request("Modify", "Job", "")), "315", "Job Modify is not implemented"},
		{"unimplemented object", signed("staff", request("Query", "Role", "")), "315", "object Role is not implemented"},
		{"scheduler deposits", signed("maui", request("Deposit", "Account", `<Option name="Id">chem</Option><Option name="Amount">10</Option>`)), "444", "may not"},
		{"no such field", signed("staff", request("Query", "Account", `<Get name="Colour"/>`)), "314", "no field Colour"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := s.entries()
			code, msg, _ := c.send()
			if code != c.code || !strings.Contains(msg, c.says) {
				t.Errorf("reply %s %q; want %s saying %q", code, msg, c.code, c.says)
			}
			if after := s.entries(); after != before {
				t.Errorf("%d journal entries written", after-before)
			}
		})
	}
}

// TestStaffCommands: deposits, a transfer, a withdrawal, balances and
// queries of the reservations and transactions, as Gold's clients send
// them.
func TestStaffCommands(t *testing.T) {
	s := newSite(t)
	ok := func(client, body, wantCount string) {
		t.Helper()
		if code, msg, count := s.send(client, body, false); code != "000" || count != wantCount {
			t.Errorf("%s: %s %s, count %s; want %s", body, code, msg, count, wantCount)
		}
	}
	ok("staff", request("Deposit", "Account", `<Option name="Id">bio</Option><Option name="Amount">500</Option><Option name="EndTime">2147483647</Option>`), "500")
	ok("staff", request("Transfer", "Account", `<Option name="FromId">chem</Option><Option name="ToId">bio</Option><Option name="Amount">1000</Option>`), "1000")
	ok("staff", request("Withdraw", "Account", `<Option name="Id">bio</Option><Option name="Amount">250</Option>`), "250")
	ok("staff", request("Query", "Account", `<Get name="Name"/><Get name="Balance"/><Option name="Project">chem.lab1</Option><Option name="User">amy</Option><Option name="UseRules">True</Option>`), "1")
	ok("staff", request("Balance", "Account", `<Where name="Name">bio</Where>`), "1250")
	ok("maui", request("Reserve", "Job", reserve4242), "14400")
	ok("staff", request("Query", "Reservation", `<Where name="JobId">4242</Where>`), "1")
	ok("staff", request("Query", "Transaction", `<Where name="JobId">4242</Where>`), "1")
	ok("staff", request("Query", "Transaction", `<Where name="Account">bio</Where><Where name="Action">Transfer</Where>`), "1")
	if b := s.MustBalance("bio"); !b.Amount.Equal(ledgertest.Dec(t, "1250")) {
		t.Errorf("bio has %s", b.Amount)
	}
}

// TestAnyChangeToTheBodyWritesNothing: a signed reservation with any one
// byte of its Body changed is refused (424, or 242 when it is no longer
// XML) and writes nothing; as signed, it is placed.
func TestAnyChangeToTheBodyWritesNothing(t *testing.T) {
	s := newSite(t)
	body := request("Reserve", "Job", reserve4242)
	digest, signature := gold.Sign([]byte(s.keys["maui"]), []byte(body))
	send := func(body []byte) (string, string, string) {
		payload := "<Envelope>" + string(body) + "<Signature><DigestValue>" + digest + "</DigestValue><SignatureValue>" + signature + "</SignatureValue></Signature></Envelope>"
		return s.exchange(fmt.Sprintf("POST /SSSRMAP3 HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s", len(payload), payload))
	}
	before := s.entries()
	for i := range len(body) {
		changed := []byte(body)
		changed[i] ^= 0x01
		if code, msg, _ := send(changed); code != "424" && code != "242" {
			t.Errorf("byte %d changed to %q: %s %s", i, changed[i], code, msg)
		}
	}
	if after := s.entries(); after != before {
		t.Fatalf("changed bodies wrote %d journal entries", after-before)
	}
	if code, msg, _ := send([]byte(body)); code != "000" {
		t.Errorf("as signed: %s %s", code, msg)
	}
}
