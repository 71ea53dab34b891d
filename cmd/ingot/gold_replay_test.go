package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/pgtest"
)

// goldExchange is one request a Gold client sent, with the command that
// sent it and the reply it got, as recorded.
type goldExchange struct {
	command, request, reply string
}

// goldSession reads a recorded session of Gold's clients
// (testdata/gold-clients.txt): the epoch second it began and its
// exchanges in order.
func goldSession(t *testing.T, path string) (int64, []goldExchange) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recorded int64
	var out []goldExchange
	command := ""
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		line := lines.Text()
		switch {
		case strings.HasPrefix(line, "recorded "):
			recorded, err = strconv.ParseInt(strings.TrimPrefix(line, "recorded "), 10, 64)
		case strings.HasPrefix(line, "$ "):
			command = strings.TrimPrefix(line, "$ ")
		case strings.HasPrefix(line, "> "):
			out = append(out, goldExchange{command: command, request: strings.TrimPrefix(line, "> ")})
		case strings.HasPrefix(line, "< ") && len(out) > 0:
			out[len(out)-1].reply = strings.TrimPrefix(line, "< ")
		}
		if err != nil {
			t.Fatalf("%s: %s: %v", path, line, err)
		}
	}
	if err := lines.Err(); err != nil || recorded == 0 || len(out) == 0 {
		t.Fatalf("%s: %d exchanges recorded at %d: %v", path, len(out), recorded, err)
	}
	return recorded, out
}

// timeValue is a time in a request: the text of a Where or Option on a
// field named ...Time.
var timeValue = regexp.MustCompile(`(name="\w*Time"[^>]*>)(\d+)<`)

// shiftTimes moves the times of a request that lie near when the session
// was recorded by shift seconds; Gold's -infinity (0) and infinity stay.
func shiftTimes(request string, recorded, shift int64) string {
	return timeValue.ReplaceAllStringFunc(request, func(m string) string {
		parts := timeValue.FindStringSubmatch(m)
		n, _ := strconv.ParseInt(parts[2], 10, 64)
		if n < recorded-86400 || n > recorded+3*86400 {
			return m
		}
		return parts[1] + strconv.FormatInt(n+shift, 10) + "<"
	})
}

// sameTime reports whether a time answered now is the one recorded: the
// same (a time the request gave, far from the session's day), or moved by
// shift within tolerance seconds (a time the bank took from its clock).
func sameTime(got, want string, shift int64) bool {
	g, errG := strconv.ParseInt(got, 10, 64)
	w, errW := strconv.ParseInt(want, 10, 64)
	if errG != nil || errW != nil || g == w {
		return got == want
	}
	const tolerance = 600
	return max(g-(w+shift), (w+shift)-g) <= tolerance
}

// goldReplay sends a recorded session's requests, in order, as client g,
// and compares each reply with the recorded one field by field: status,
// message, count and every field of every row, times moved with the day.
// It returns the last replies of gbalance to its three queries (the
// accounts, their allocations, what reservations hold).
func goldReplay(t *testing.T, g goldClient, path string) (accounts, allocations, reservations goldReply) {
	t.Helper()
	recorded, exchanges := goldSession(t, path)
	shift := time.Now().Unix() - recorded
	for i, x := range exchanges {
		got, err := g.send(shiftTimes(x.request, recorded, shift))
		if err != nil {
			t.Fatalf("%s: %s: request %d: %v", path, x.command, i, err)
		}
		want, err := decodeGoldReply([]byte(x.reply))
		if err != nil {
			t.Fatalf("%s: %s: recorded reply %d: %v", path, x.command, i, err)
		}
		where := x.command + ": " + x.request
		if got.Value != want.Value || got.Code != want.Code || got.Message != want.Message || got.Count != want.Count {
			t.Errorf("%s\ngot  %s %s %q count %s\nwant %s %s %q count %s", where, got.Value, got.Code, got.Message, got.Count, want.Value, want.Code, want.Message, want.Count)
			continue
		}
		if len(got.Rows) != len(want.Rows) {
			t.Errorf("%s\ngot %d rows %v\nwant %d %v", where, len(got.Rows), got.Rows, len(want.Rows), want.Rows)
			continue
		}
		for r, row := range want.Rows {
			for name, w := range row {
				g, ok := got.Rows[r][name]
				if !ok || strings.HasSuffix(name, "Time") && !sameTime(g, w, shift) || !strings.HasSuffix(name, "Time") && g != w {
					t.Errorf("%s\nrow %d field %s: got %q, want %q", where, r, name, g, w)
				}
			}
			if len(got.Rows[r]) != len(row) {
				t.Errorf("%s\nrow %d: got fields %v, want %v", where, r, got.Rows[r], row)
			}
		}
		if x.command != "gbalance" {
			continue
		}
		switch {
		case strings.Contains(x.request, "<Object>Account</Object>"):
			accounts = got
		case strings.Contains(x.request, "<Object>Allocation</Object>"):
			allocations = got
		case strings.Contains(x.request, "<Object>ReservationAllocation</Object>"):
			reservations = got
		}
	}
	return accounts, allocations, reservations
}

// TestGoldClientsReplay replays the requests Gold 2.2.0.5's own clients
// sent (testdata/gold-clients.txt: a bank built only through gmkuser,
// gmkproject, gmkmachine, gmkaccount and gdeposit, jobs reserved, charged
// and refunded, transfers and withdrawals by project and by account id,
// reservations and an allocation changed, records changed and deleted,
// then every listing client, gbalance, gstatement and gusage) to a new
// bank with a Gold admin client. Then the user client of amy replays what
// her clients got (testdata/gold-clients-user.txt): only what ingot shows
// her, and 444 for the rest. Then the bank passes the full audit, and
// ingot's balances are what gbalance's last requests answered.
// It runs on a bank file and on a bank in PostgreSQL.
func TestGoldClientsReplay(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) {
		b := newCLIBank(t)
		goldClientsReplay(t, b, nil, []string{"--db", b.db})
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.Start(t).NewDB(t)
		b := onStore(t, url)
		b.ok("init")
		serverKey := []string{"--server-key", filepath.Join(t.TempDir(), "server.key")}
		goldClientsReplay(t, b, serverKey, []string{"--store", url})
	})
}

// goldClientsReplay is TestGoldClientsReplay on bank b, named to serve by
// store; client add and serve take keyFlags.
func goldClientsReplay(t *testing.T, b *cliBank, keyFlags, store []string) {
	out := b.ok(append([]string{"client", "add", "staff", "--role", "admin", "--gold"}, keyFlags...)...)
	staff := goldClient{key: goldKeyOf(t, out), actor: "root"}
	srv := startServe(t, slices.Concat(store, []string{"serve", "--listen", "127.0.0.1:0", "--gold-listen", "127.0.0.1:0"}, keyFlags)...)
	staff.addr = srv.line(t, "gold listening on ")
	accounts, allocations, reservations := goldReplay(t, staff, "testdata/gold-clients.txt")

	// amy's key, made through the server by the staff's ingot key.
	_, after, _ := strings.Cut(out, "# ingot's key file (INGOT_KEY_FILE):\n")
	keyFile := filepath.Join(t.TempDir(), "staff.key")
	if err := os.WriteFile(keyFile, []byte(strings.SplitN(after, "\n", 2)[0]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var added bytes.Buffer
	if code := run([]string{"ingot", "--server", "http://" + srv.line(t, "listening on http://"), "--key-file", keyFile,
		"client", "add", "amy-gold", "--role", "user", "--scope", "amy", "--gold"}, &added, &added); code != exitOK {
		t.Fatalf("client add amy-gold: %d\n%s", code, added.String())
	}
	amy := goldClient{key: goldKeyOf(t, added.String()), actor: "root", addr: staff.addr}
	goldReplay(t, amy, "testdata/gold-clients-user.txt")

	if err := srv.shutdown(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if out := b.ok("audit", "--full"); !strings.Contains(out, "OK") {
		t.Errorf("audit --full: %s", out)
	}

	// gbalance's figures (its last run): each account's active
	// allocations' amounts and what reservations hold on it, against
	// ingot balance; the accounts are named by their Gold ids, which
	// gbalance's query of the accounts gives the names of.
	if len(allocations.Rows) == 0 {
		t.Fatal("the session has no gbalance")
	}
	names := map[string]string{}
	for _, r := range accounts.Rows {
		names[r["Id"]] = r["Name"]
	}
	held := map[string]decimal.Decimal{}
	for _, r := range reservations.Rows {
		held[r["Account"]] = decimal.RequireFromString(r["Amount"])
	}
	for _, r := range allocations.Rows {
		nb := balanceOf(b, names[r["Account"]])
		amount := decimal.RequireFromString(r["Amount"])
		reserved := held[r["Account"]]
		if !nb.Amount.Equal(amount) || !nb.Reserved.Equal(reserved) || !nb.Balance.Balance.Equal(amount.Sub(reserved)) {
			t.Errorf("account %s: ingot balance %s reserved %s balance %s; gbalance %s reserved %s", r["Account"], nb.Amount, nb.Reserved, nb.Balance.Balance, amount, reserved)
		}
	}
}
