package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/server"
)

// remoteSite is a bank served by the real proto/server over HTTP
// (httptest), in-process, on a real bbolt file; the command line reaches it
// with --server and a key file. Its admin is the client root.
type remoteSite struct {
	*cliBank // as root
	t        *testing.T
	url      string
	keys     string // the folder of the key files
}

// newRemoteSite makes a bank with `ingot init` and an admin client root
// on the file, then serves it. The file's audit runs at cleanup, after the
// server has let go of it.
func newRemoteSite(t *testing.T) *remoteSite {
	file := newCLIBank(t)
	keys := t.TempDir()
	root := filepath.Join(keys, "root.key")
	file.ok("client", "add", "root", "--role", "admin", "--key-out", root)

	store, err := boltstore.Open(file.db, boltstore.Options{LockTimeout: lockTimeout})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	serverKey, _, err := clients.LoadServerKey(filepath.Join(filepath.Dir(file.db), "server.key"), false)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := clients.New(l, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(l, lien.New(l), reg, &auth.Verifier{Lookup: server.KeyLookup(reg)}, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		if err := l.Close(); err != nil {
			t.Errorf("close the served bank: %v", err)
		}
	})
	s := &remoteSite{t: t, url: ts.URL, keys: keys}
	s.cliBank = s.as("root")
	return s
}

// as is the command line with the key of client name.
func (s *remoteSite) as(name string) *cliBank {
	return &cliBank{t: s.t, global: []string{"--server", s.url, "--key-file", s.keyFile(name)}}
}

func (s *remoteSite) keyFile(name string) string { return filepath.Join(s.keys, name+".key") }

// addClient adds a client through the server, as root, with its key in
// the site's key folder.
func (s *remoteSite) addClient(name, role string, scope ...string) *cliBank {
	args := []string{"client", "add", name, "--role", role, "--key-out", s.keyFile(name)}
	for _, sc := range scope {
		args = append(args, "--scope", sc)
	}
	s.ok(args...)
	return s.as(name)
}

// refused runs a command as a client and checks that it exits with code,
// says what it should, and writes nothing (journal length as root sees it).
func (s *remoteSite) refused(t *testing.T, as *cliBank, code int, says string, args ...string) {
	t.Helper()
	before := s.entries()
	out, got := as.run(args...)
	if got != code || !strings.Contains(out, says) {
		t.Errorf("ingot %s: exit %d, output %q; want exit %d saying %q", strings.Join(args, " "), got, out, code, says)
	}
	if after := s.entries(); after != before {
		t.Errorf("ingot %s: refused, but wrote %d journal entries", strings.Join(args, " "), after-before)
	}
}

// Normalising the output of two banks made by the same commands: what
// differs between them and nothing else. Times (the banks were made at
// different instants, and the output shows the time of each change), the
// hash chain (it hashes the times), the random part of key ids and their
// sealed secrets (in the admin's journal: sealed under another server key), the key
// files' folders, the random request ids of the changes the walk does not
// name (the banks' first entries), and the actor (local:USER on the file,
// client:root through the server). The actor's width differs, so the table
// columns after it do too: runs of spaces are folded.
var (
	anyTime      = regexp.MustCompile(`\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`)
	anyHash      = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	anyRequestID = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
	anySealedKey = regexp.MustCompile(`"sealed": "[^"]*"`)
	anyKeyID     = regexp.MustCompile(`\b([a-z]+)\.[0-9a-f]{8}\b`)
	anySpace     = regexp.MustCompile(` +`)
)

func normalise(out string, actors []string, folder string) string {
	out = strings.ReplaceAll(out, folder, "KEYS")
	for _, actor := range actors {
		out = strings.ReplaceAll(out, actor, "ACTOR")
	}
	out = anyTime.ReplaceAllString(out, "TIME")
	out = anyHash.ReplaceAllString(out, "HASH")
	out = anyRequestID.ReplaceAllString(out, "REQUEST")
	out = anySealedKey.ReplaceAllString(out, `"sealed": "SEALED"`)
	out = anyKeyID.ReplaceAllString(out, "$1.KEY")
	return anySpace.ReplaceAllString(out, " ")
}

// localActor is the actor of a change made on the database file.
func localActor(t *testing.T) string {
	u, err := user.Current()
	if err != nil {
		t.Skipf("no local user name: %v", err)
	}
	return "local:" + u.Username
}

// twin is the same walk on two banks: one on its file, one through the
// server; every step's output must read the same on both.
type twin struct {
	t          *testing.T
	file       *cliBank
	fileKeys   string
	remote     *remoteSite
	localActor string
	requests   int
}

func newTwin(t *testing.T) *twin {
	tw := &twin{t: t, file: newCLIBank(t), fileKeys: t.TempDir(), remote: newRemoteSite(t), localActor: localActor(t)}
	// The served bank's journal starts with its admin client: so does the
	// file's, so that entry numbers agree.
	tw.file.ok("client", "add", "root", "--role", "admin", "--key-out", filepath.Join(tw.fileKeys, "root.key"))
	return tw
}

// same runs args on both banks and checks that they exit alike and print
// the same, normalised; it returns the exit code. KEYS in an argument is
// each bank's folder of key files.
func (tw *twin) same(args ...string) int {
	tw.t.Helper()
	local, localCode := tw.file.run(inFolder(args, tw.fileKeys)...)
	remote, remoteCode := tw.remote.run(inFolder(args, tw.remote.keys)...)
	if localCode != remoteCode {
		tw.t.Fatalf("ingot %s: exit %d on the file, %d through the server\nfile:\n%s\nserver:\n%s", strings.Join(args, " "), localCode, remoteCode, local, remote)
	}
	actors := []string{tw.localActor, "client:root"}
	l := normalise(local, actors, tw.fileKeys)
	r := normalise(remote, actors, tw.remote.keys)
	if l != r {
		tw.t.Errorf("ingot %s prints differently through the server\nfile:\n%s\nserver:\n%s", strings.Join(args, " "), l, r)
	}
	return localCode
}

func inFolder(args []string, folder string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "KEYS", folder)
	}
	return out
}

// read compares a read in every format; it must succeed.
func (tw *twin) read(args ...string) {
	tw.t.Helper()
	for _, format := range [][]string{nil, {"--json"}, {"--parsable"}} {
		tw.ok(append(args, format...)...)
	}
}

// ok compares a command that must succeed.
func (tw *twin) ok(args ...string) {
	tw.t.Helper()
	if code := tw.same(args...); code != exitOK {
		tw.t.Fatalf("ingot %s exited %d", strings.Join(args, " "), code)
	}
}

// change makes a change with the same request id on both banks, then asks
// again with that id in every format: a retry answers the first answer and
// writes nothing.
func (tw *twin) change(args ...string) {
	tw.t.Helper()
	tw.requests++
	args = append(args, "--request-id", fmt.Sprintf("walk-%d", tw.requests))
	tw.ok(args...)
	before := tw.remote.entries()
	tw.read(args...)
	if after := tw.remote.entries(); after != before {
		tw.t.Errorf("ingot %s: a retry wrote %d journal entries", strings.Join(args, " "), after-before)
	}
}

// TestRemoteOutputIsLocalOutput walks through the commands on a bank file
// and on a served bank made the same way: every output, in every format, is
// the same once normalised (see normalise), and so is every exit code.
// Changes are compared, then retried with their request id in each format.
func TestRemoteOutputIsLocalOutput(t *testing.T) {
	tw := newTwin(t)
	tw.change("account", "create", "chem", "-d", "Chemistry")
	tw.change("account", "create", "bio")
	tw.change("project", "create", "chem.lab1", "--quota", "dynamic:0.6")
	tw.change("project", "create", "chem.lab2", "--quota", "dynamic:0.4", "--accept-surplus")
	tw.change("project", "policy", "chem.lab2", "--limit", "90000")
	tw.change("user", "add", "amy", "--member", "chem.lab1", "--default-project", "chem.lab1")
	tw.change("user", "add", "bob", "--member", "bio", "--default-project", "bio")
	tw.change("user", "modify", "amy", "--manager", "chem.lab2")
	tw.change("machine", "add", "hpc1", "--cores", "32", "--memory-mb", "128000")
	tw.change("machine", "modify", "hpc1", "--gpus", "4")
	tw.change("deposit", "chem", "100000", "--end", "2031-01-01", "-d", "grant")
	tw.change("deposit", "bio", "5000", "--credit-limit", "100")
	tw.change("transfer", "chem", "bio", "1000")
	tw.change("withdraw", "bio", "10.50")
	tw.change("rate", "add", "NBM", "QualityOfService=premium", "2")
	tw.change("rate", "window", "add", "night", "--start", "20:00", "--end", "06:00", "--multiplier", "0.5")
	tw.change("policy", "set", "DEBITSUCCESSFULWC", "--machine", "hpc1")
	tw.change("policy", "fallback", "bio", "--project", "chem.lab2")
	tw.change("policy", "grace", "15m")

	tw.read("quote", "--user", "amy", "--procs", "8", "--wallclock", "2h", "--qos", "premium", "--start", futureMonday)
	// A guarantee runs until a time counted from now: asked again, it would
	// be other content, so it is compared once.
	tw.ok("quote", "--user", "amy", "--procs", "2", "--wallclock", "1h", "--start", futureMonday, "--guarantee", "--valid-for", "24h", "--request-id", "g1")
	tw.change("lien", "place", "j1", "--user", "amy", "--procs", "8", "--wallclock", "2h", "--start", futureMonday)
	tw.change("lien", "place", "j2", "--user", "amy", "--project", "chem.lab2", "--procs", "1", "--wallclock", "10m", "--start", futureMonday)
	tw.read("lien", "list")
	tw.read("lien", "show", "j1")
	tw.change("lien", "extend", "j1", "--wallclock", "2:01:00")
	tw.change("lien", "release", "j2")
	tw.read("lien", "list", "chem", "--all")
	tw.change("charge", "j1", "--procs", "8", "--wallclock-used", "1h", "--wallclock-limit", "2h", "--cpu-seconds", "14400", "--start", pastMonday)
	tw.read("charge", "list", "j1")
	tw.change("refund", "1", "100", "-d", "node failure")
	tw.change("reservation", "add", "maint", "--procs", "16", "--start", "2026-01-05T10:00:00Z", "--end", "2026-01-05T12:00:00Z", "--user", "amy")
	tw.change("reservation", "flush", "maint", "--running-proc-seconds", "3600")
	tw.change("reservation", "end", "maint")
	tw.change("lien", "sweep")

	tw.read("balance")
	tw.read("balance", "chem")
	tw.read("balance", "chem", "bio", "--allocations")
	tw.read("balance", "bio", "--at", "2099-01-01")
	tw.read("statement", "chem")
	tw.read("statement", "bio", "--summarize", "--start", "2020-01-01")
	tw.read("journal")
	tw.read("journal", "--node", "chem", "--kind", "deposit", "--kind", "charge", "--limit", "3")
	tw.read("hfs", "show", "chem")
	tw.read("fairshare", "chem", "--half-life", "0")
	tw.read("account", "list")
	tw.read("project", "list", "chem")
	tw.read("account", "show", "chem")
	tw.read("project", "policy", "chem.lab1")
	tw.read("user", "list")
	tw.read("machine", "list")
	tw.read("rate", "list")
	tw.read("policy", "show")
	tw.read("quote", "list")
	tw.read("reservation", "list")
	tw.read("audit")
	tw.read("client", "list")
	tw.ok("client", "add", "slurm", "--role", "scheduler", "--scope", "hpc1", "--key-out", "KEYS/slurm.key")

	// Refusals exit alike.
	for _, refused := range [][]string{
		{"deposit", "nope", "5"},       // not found
		{"deposit", "chem", "1.005"},   // invalid
		{"withdraw", "bio", "1000000"}, // insufficient funds
		{"account", "create", "chem"},  // exists
		{"lien", "show", "nojob"},      // no lien
		{"charge", "j1", "--procs", "8", "--wallclock-used", "1h", "--start", pastMonday}, // charged already
		{"deposit", "chem", "5", "--request-id", "walk-11"},                               // request id reused for other content
	} {
		if code := tw.same(refused...); code == exitOK {
			t.Errorf("ingot %s succeeded", strings.Join(refused, " "))
		}
	}
	if f, r := tw.file.entries(), tw.remote.entries(); f != r {
		t.Errorf("the file's journal has %d entries, the served bank's %d", f, r)
	}
}
