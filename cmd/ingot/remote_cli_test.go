package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/forecast"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/server"
	"github.com/shopspring/decimal"
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

	ts := serveFile(t, file.db, nil)
	s := &remoteSite{t: t, url: ts.URL, keys: keys}
	s.cliBank = s.as("root")
	return s
}

// serveFile serves the bank file db through an in-process server until
// the test ends, through wrap if it is not nil (to watch the requests).
func serveFile(t *testing.T, db string, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	store, err := boltstore.Open(db, boltstore.Options{LockTimeout: lockTimeout})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	serverKey, _, err := clients.LoadServerKey(filepath.Join(filepath.Dir(db), "server.key"), false)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := clients.New(l, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = server.New(l, lien.New(l), reg, &auth.Verifier{Lookup: server.KeyLookup(reg)}, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.Close()
		if err := l.Close(); err != nil {
			t.Errorf("close the served bank: %v", err)
		}
	})
	return ts
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
	tw.change("project", "deactivate", "chem.lab2")
	tw.change("project", "reactivate", "chem.lab2")
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
	tw.change("deposit", "bio", "0", "--credit-limit", "300")
	tw.change("allocation", "modify", "2", "--credit-limit", "150")
	tw.change("rate", "add", "NBM", "QualityOfService=premium", "2")
	tw.change("rate", "window", "add", "night", "--start", "20:00", "--end", "06:00", "--multiplier", "0.5")
	tw.change("policy", "set", "DEBITSUCCESSFULWC", "--machine", "hpc1")
	tw.change("policy", "fallback", "bio", "--project", "chem.lab2")
	tw.change("policy", "grace", "15m")

	tw.read("quote", "--user", "amy", "--procs", "4", "--wallclock", "2h", "--qos", "premium", "--start", futureMonday)
	// More than chem.lab1's share: the price, and exit 4, either way.
	if code := tw.same("quote", "--user", "amy", "--procs", "8", "--wallclock", "2h", "--qos", "premium", "--start", futureMonday); code != exitRefused {
		t.Errorf("a quote beyond the project's share exited %d, want %d", code, exitRefused)
	}
	// A guarantee runs until a time counted from now: asked again, it would
	// be other content, so it is compared once.
	tw.ok("quote", "--user", "amy", "--procs", "2", "--wallclock", "1h", "--start", futureMonday, "--guarantee", "--valid-for", "24h", "--request-id", "g1")
	tw.change("lien", "place", "j1", "--user", "amy", "--procs", "8", "--wallclock", "2h", "--start", futureMonday)
	tw.change("lien", "place", "j2", "--user", "amy", "--project", "chem.lab2", "--procs", "1", "--wallclock", "10m", "--start", futureMonday)
	tw.read("lien", "list")
	tw.read("lien", "show", "j1")
	tw.change("lien", "extend", "j1", "--wallclock", "2:01:00")
	tw.change("lien", "modify", "j1", "--end", "2030-01-07T12:00:00Z")
	tw.change("lien", "release", "j2")
	tw.read("lien", "list", "chem", "--all")
	tw.change("charge", "j1", "--procs", "8", "--wallclock-used", "1h", "--wallclock-limit", "2h", "--cpu-seconds", "14400", "--start", pastMonday)
	tw.read("charge", "list", "j1")
	tw.change("refund", "1", "100", "-d", "node failure")
	tw.change("refund", "--job", "j1", "50")
	tw.read("journal", "--job", "j1")
	tw.change("reservation", "add", "maint", "--procs", "16", "--start", "2026-01-05T10:00:00Z", "--end", "2026-01-05T12:00:00Z", "--user", "amy")
	tw.change("reservation", "flush", "maint", "--running-proc-seconds", "3600")
	tw.change("reservation", "end", "maint")
	tw.change("lien", "sweep")

	tw.read("balance")
	tw.read("balance", "chem")
	tw.read("balance", "chem", "bio", "--allocations")
	tw.read("balance", "chem", "--all-allocations")
	tw.read("balance", "bio", "--at", "2099-01-01")
	tw.read("balance", "--forecast")
	tw.change("allocation", "schedule", "chem", "1000", "--every", "quarter", "--start", "2027-01-01", "--count", "3", "--carry-over", "50:300")
	tw.change("allocation", "schedule", "modify", "1", "--amount", "1500", "--carry-over", "all")
	tw.read("allocation", "schedule", "list")
	tw.read("allocation", "schedule", "show", "1")
	tw.read("balance", "--upcoming")
	tw.read("balance", "chem.lab1", "--upcoming")
	tw.read("balance", "chem", "chem.lab1", "--forecast")
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

// newRemoteRoles is a served bank with accounts chem and bio, projects
// chem.lab1 (user amy) and bio.lab1 (user bob), machines hpc1 and hpc2,
// credits in both accounts, a lien of each user's (jobs ja and jb on
// hpc1, jc of amy's on hpc2), and a client of each role: amy (user amy),
// chemmgr (manager of chem) and sched (scheduler of hpc1).
func newRemoteRoles(t *testing.T) *remoteSite {
	s := newRemoteSite(t)
	for _, args := range [][]string{
		{"account", "create", "chem"}, {"project", "create", "chem.lab1"},
		{"account", "create", "bio"}, {"project", "create", "bio.lab1"},
		{"machine", "add", "hpc1", "--cores", "32"}, {"machine", "add", "hpc2", "--cores", "32"},
		{"user", "add", "amy", "--member", "chem.lab1", "--default-project", "chem.lab1"},
		{"user", "add", "bob", "--member", "bio.lab1", "--default-project", "bio.lab1"},
		{"deposit", "chem", "100000"}, {"deposit", "bio", "100000"},
		{"lien", "place", "ja", "--machine", "hpc1", "--user", "amy", "--procs", "1", "--wallclock", "1h", "--start", futureMonday},
		{"lien", "place", "jb", "--machine", "hpc1", "--user", "bob", "--procs", "1", "--wallclock", "1h", "--start", futureMonday},
		{"lien", "place", "jc", "--machine", "hpc2", "--user", "amy", "--procs", "1", "--wallclock", "1h", "--start", futureMonday},
	} {
		s.ok(args...)
	}
	s.addClient("amy", "user", "amy")
	s.addClient("chemmgr", "manager", "chem")
	s.addClient("sched", "scheduler", "hpc1")
	return s
}

// jobsIn are the job ids of a --json list of liens or charges.
func jobsIn(b *cliBank, args ...string) []string {
	b.t.Helper()
	var records []struct {
		JobID string `json:"job_id"`
	}
	b.json(&records, args...)
	jobs := make([]string, len(records))
	for i, r := range records {
		jobs[i] = r.JobID
	}
	return jobs
}

func wantList[T comparable](t *testing.T, what string, got []T, want ...T) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestRemoteUserReadsOnlyItsProjects: a user client lists only its own
// project's balance, liens, charges, journal and user record, and is
// refused (exit 4, naming the project) what belongs to another.
func TestRemoteUserReadsOnlyItsProjects(t *testing.T) {
	s := newRemoteRoles(t)
	s.ok("charge", "jb", "--machine", "hpc1", "--procs", "1", "--wallclock-used", "10m", "--start", pastMonday)
	amy := s.as("amy")

	var balances []ledger.NodeBalance
	amy.json(&balances, "balance")
	if len(balances) != 1 || balances[0].Node != "chem.lab1" {
		t.Errorf("amy's balances: %+v", balances)
	}
	if out := amy.ok("balance"); strings.Contains(out, "bio") {
		t.Errorf("amy's balance table shows bio:\n%s", out)
	}
	var forecasts []forecast.Forecast
	amy.json(&forecasts, "balance", "--forecast")
	if len(forecasts) != 1 || forecasts[0].Node != "chem.lab1" {
		t.Errorf("amy's forecasts: %+v", forecasts)
	}
	wantList(t, "amy's liens", jobsIn(amy, "lien", "list"), "ja", "jc")
	wantList(t, "amy's view of bob's charges", jobsIn(amy, "charge", "list", "jb", "--machine", "hpc1"))
	wantList(t, "amy's charges of her own job", jobsIn(amy, "charge", "list", "ja", "--machine", "hpc1"))
	var users []ledger.User
	amy.json(&users, "user", "list")
	if len(users) != 1 || users[0].Name != "amy" {
		t.Errorf("amy lists users %+v", users)
	}
	var projects []ledger.Node
	amy.json(&projects, "project", "list")
	if len(projects) != 1 || projects[0].Name != "chem.lab1" {
		t.Errorf("amy lists projects %+v", projects)
	}
	amy.ok("journal", "--node", "chem.lab1")

	for _, tc := range []struct {
		says string
		args []string
	}{
		{"client amy (user of amy) may not read bio.lab1: user amy is not a member or manager of it", []string{"balance", "bio.lab1"}},
		{"may not read chem: user amy is not a member", []string{"balance", "chem"}},
		{"may not read bio.lab1", []string{"balance", "bio.lab1", "--forecast"}},
		{"may not read bio", []string{"lien", "list", "bio"}},
		{"may not read bio.lab1", []string{"journal", "--node", "bio.lab1"}},
		{"may not read the whole journal", []string{"journal"}},
		{"may not read bio", []string{"statement", "bio"}},
		{"may not read bio", []string{"hfs", "show", "bio"}},
		{"may not POST /v1/deposits", []string{"deposit", "chem", "5"}},
		{"may not POST /v1/liens", []string{"lien", "place", "jz", "--machine", "hpc1", "--user", "amy", "--procs", "1", "--wallclock", "1m"}},
		{"may not GET /v1/audit", []string{"audit"}},
		{"may not GET /v1/clients", []string{"client", "list"}},
	} {
		s.refused(t, amy, exitRefused, tc.says, tc.args...)
	}
	// Another project's job is one amy cannot tell from no job at all.
	s.refused(t, amy, exitNotFound, "no lien for job jb on hpc1", "lien", "show", "jb", "--machine", "hpc1")
}

// TestRemoteManagerActsInItsSubtree: a manager deposits into, reads and
// makes projects inside its subtree, and is refused outside it.
func TestRemoteManagerActsInItsSubtree(t *testing.T) {
	s := newRemoteRoles(t)
	mgr := s.as("chemmgr")
	mgr.ok("deposit", "chem", "10")
	mgr.ok("withdraw", "chem", "5")
	mgr.ok("project", "create", "chem.lab2", "--quota", "dynamic:0.5")
	mgr.ok("project", "policy", "chem.lab1", "--quota", "dynamic:0.5")
	mgr.ok("project", "create", "chem.lab1.spectra", "--quota", "shares:1")
	mgr.ok("project", "deactivate", "chem.lab1.spectra")
	mgr.ok("project", "reactivate", "chem.lab1.spectra")
	mgr.ok("statement", "chem")
	var balances []ledger.NodeBalance
	mgr.json(&balances, "balance")
	if len(balances) != 1 || balances[0].Node != "chem" {
		t.Errorf("the manager's balances: %+v", balances)
	}
	wantList(t, "the manager's liens", jobsIn(mgr, "lien", "list"), "ja", "jc")
	for _, tc := range []struct {
		says string
		args []string
	}{
		{"client chemmgr (manager of chem) may not deposit into bio: outside the subtrees it manages", []string{"deposit", "bio", "10"}},
		{"may not transfer to bio", []string{"transfer", "chem", "bio", "10"}},
		{"may not read bio", []string{"balance", "bio"}},
		{"may not create bio.lab2: it is not below a node it manages", []string{"project", "create", "bio.lab2"}},
		{"may not create phys: it is not below a node it manages", []string{"account", "create", "phys"}},
		{"may not change chem: it is not below a node it manages", []string{"account", "modify", "chem", "-d", "mine"}},
		{"may not deactivate bio.lab1", []string{"project", "deactivate", "bio.lab1"}},
		{"may not reactivate bio.lab1: it is not below a node it manages", []string{"project", "reactivate", "bio.lab1"}},
		{"may not reactivate chem: it is not below a node it manages", []string{"account", "reactivate", "chem"}},
		{"may not POST /v1/users", []string{"user", "add", "carl"}},
		{"may not POST /v1/rates", []string{"rate", "add", "VBR", "Processors", "2"}},
		{"may not POST /v1/config", []string{"policy", "set", "DEBITALLCPU"}},
		{"may not GET /v1/audit", []string{"audit"}},
	} {
		s.refused(t, mgr, exitRefused, tc.says, tc.args...)
	}
}

// TestRemoteSchedulerActsOnItsMachines: a scheduler quotes, places and
// charges on its machines and reads balances; it moves no credits.
func TestRemoteSchedulerActsOnItsMachines(t *testing.T) {
	s := newRemoteRoles(t)
	sched := s.as("sched")
	job := []string{"--machine", "hpc1", "--user", "amy", "--procs", "2", "--wallclock", "1h", "--start", futureMonday}
	sched.ok(append([]string{"quote"}, job...)...)
	sched.ok(append([]string{"lien", "place", "js"}, job...)...)
	sched.ok("lien", "extend", "js", "--machine", "hpc1", "--wallclock", "2h")
	sched.ok("charge", "js", "--machine", "hpc1", "--procs", "2", "--wallclock-used", "30m", "--start", pastMonday)
	sched.ok("balance")
	wantList(t, "the scheduler's liens", jobsIn(sched, "lien", "list"), "ja", "jb")
	for _, tc := range []struct {
		says string
		args []string
	}{
		{"client sched (role scheduler) may not POST /v1/transfers", []string{"transfer", "chem", "bio", "1"}},
		{"may not POST /v1/deposits", []string{"deposit", "chem", "1"}},
		{`client sched (scheduler of hpc1) may not place a lien on machine "hpc2": not one of its machines`,
			[]string{"lien", "place", "jt", "--machine", "hpc2", "--user", "amy", "--procs", "1", "--wallclock", "1m"}},
		{`may not release a lien on machine "hpc2"`, []string{"lien", "release", "jc", "--machine", "hpc2"}},
		{`may not read the lien of job jc on machine "hpc2"`, []string{"lien", "show", "jc", "--machine", "hpc2"}},
		{"may not POST /v1/refunds", []string{"refund", "1"}},
		{"may not GET /v1/journal", []string{"journal"}},
	} {
		s.refused(t, sched, exitRefused, tc.says, tc.args...)
	}
}

// TestRemoteKeys: a key the server does not accept is exit 8, a server
// that cannot be reached exit 6; neither writes.
func TestRemoteKeys(t *testing.T) {
	s := newRemoteRoles(t)
	raw, err := os.ReadFile(s.keyFile("root"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := auth.ParseKeyFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	key.Secret[0] ^= 1
	writeKey(t, s.keyFile("wrong"), key)
	key.ID = "nobody.00000000"
	writeKey(t, s.keyFile("unknown"), key)
	var list []clients.Client
	s.json(&list, "client", "list")
	i := slices.IndexFunc(list, func(c clients.Client) bool { return c.Name == "amy" })
	s.ok("client", "rotate", "amy", "--key-out", s.keyFile("amy2"))
	s.ok("client", "revoke", "amy", list[i].Keys[0].ID)

	deposit := []string{"deposit", "chem", "1"}
	s.refused(t, s.as("wrong"), exitAuth, "signature does not match", deposit...)
	s.refused(t, s.as("unknown"), exitAuth, `unknown or revoked key: "nobody.00000000"`, deposit...)
	s.refused(t, s.as("amy"), exitAuth, "unknown or revoked key", "balance")
	s.as("amy2").ok("balance", "chem.lab1")
	s.refused(t, s.as("missing"), exitAuth, "no client key", deposit...)
	noKey := &cliBank{t: t, global: []string{"--server", s.url}}
	s.refused(t, noKey, exitAuth, "--server needs --key-file FILE or INGOT_KEY_FILE", deposit...)
	down := &cliBank{t: t, global: []string{"--server", "http://127.0.0.1:1", "--key-file", s.keyFile("root")}}
	// The message names the server, not the request the command made.
	s.refused(t, down, exitUnavailable, "ingot: server http://127.0.0.1:1 cannot be reached: dial tcp 127.0.0.1:1: connect: connection refused (tried 3 times)\n", deposit...)
	notHTTP := &cliBank{t: t, global: []string{"--server", "ftp://bank", "--key-file", s.keyFile("root")}}
	s.refused(t, notHTTP, exitUsage, "is not an http(s)://host[:port] URL", deposit...)
	// A key file others may read is refused, as ssh refuses such a key.
	raw, rerr := os.ReadFile(s.keyFile("root"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	open := filepath.Join(t.TempDir(), "open.key")
	if err := os.WriteFile(open, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o644) // whatever the umask
	openKey := &cliBank{t: t, global: []string{"--server", s.url, "--key-file", open}}
	s.refused(t, openKey, exitAuth, "is open to group or others (mode 0644); it holds a secret: chmod 600 "+open, deposit...)
}

func writeKey(t *testing.T, path string, key auth.Key) {
	t.Helper()
	if err := os.WriteFile(path, key.KeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRemoteRefusesLocalCommands: what works on this machine's file says
// so rather than act locally under --server. (man and completion, which
// need no bank, work whatever --server says: TestGeneratedText...)
func TestRemoteRefusesLocalCommands(t *testing.T) {
	s := newRemoteSite(t)
	for _, args := range [][]string{{"init"}, {"serve"}} {
		s.refused(t, s.cliBank, exitUsage, "does not go through --server", args...)
	}
}

// TestRemoteBackup: an admin takes a backup through the server while it
// serves; the copy is a sound bank with the same balances. Other clients
// may not.
func TestRemoteBackup(t *testing.T) {
	s := newRemoteSite(t)
	s.ok("account", "create", "chem")
	s.ok("deposit", "chem", "100")
	dest := filepath.Join(t.TempDir(), "copy.db")
	if out := s.ok("backup", dest); !strings.Contains(out, "audit OK") {
		t.Fatalf("backup through the server: %s", out)
	}
	copied := onFile(t, dest)
	if got, want := copied.ok("balance", "--parsable"), s.ok("balance", "--parsable"); got != want {
		t.Errorf("the copy's balances:\n%s\nthe server's:\n%s", got, want)
	}
	s.ok("machine", "add", "hpc1")
	slurm := s.addClient("slurm", "scheduler", "hpc1")
	s.refused(t, slurm, exitRefused, "may not GET /v1/backup", "backup", filepath.Join(t.TempDir(), "other.db"))
}

// TestUsageByRole: a usage report and a filtered charge list sum and list
// the charges the client reads: a user's of their projects, a manager's of
// its subtree, a scheduler's of its machines, the admin's all; the API's
// own report (GET /v1/usage) agrees and is refused to a scheduler.
func TestUsageByRole(t *testing.T) {
	s := newRemoteRoles(t)
	for _, j := range [][]string{{"ja", "hpc1", "600"}, {"jb", "hpc1", "1200"}, {"jc", "hpc2", "300"}} {
		s.ok("charge", j[0], "--machine", j[1], "--procs", "1", "--wallclock-used", j[2], "--start", futureMonday)
	}
	for _, tc := range []struct {
		who, want string
	}{
		{"root", "Project|Jobs|Charges|Charged|Refunded|Net\nbio.lab1|1|1|1200.00|0.00|1200.00\nchem.lab1|2|2|900.00|0.00|900.00\n"},
		{"amy", "Project|Jobs|Charges|Charged|Refunded|Net\nchem.lab1|2|2|900.00|0.00|900.00\n"},
		{"chemmgr", "Project|Jobs|Charges|Charged|Refunded|Net\nchem.lab1|2|2|900.00|0.00|900.00\n"},
		{"sched", "Project|Jobs|Charges|Charged|Refunded|Net\nbio.lab1|1|1|1200.00|0.00|1200.00\nchem.lab1|1|1|600.00|0.00|600.00\n"},
	} {
		if got := s.as(tc.who).ok("usage", "-P"); got != tc.want {
			t.Errorf("usage as %s:\n%s\nwant:\n%s", tc.who, got, tc.want)
		}
	}
	if got := jobsIn(s.as("amy"), "charge", "list", "--machine", "hpc2"); !slices.Equal(got, []string{"jc"}) {
		t.Errorf("amy's charges on hpc2: %v", got)
	}
	if got := jobsIn(s.cliBank, "charge", "list", "--project", "bio"); !slices.Equal(got, []string{"jb"}) {
		t.Errorf("bio's charges: %v", got)
	}
	if out := s.ok("usage", "--by", "user", "--csv"); out != "User,Jobs,Charges,Charged,Refunded,Net\namy,2,2,900.00,0.00,900.00\nbob,1,1,1200.00,0.00,1200.00\n" {
		t.Errorf("usage --csv:\n%s", out)
	}
	s.refused(t, s.cliBank, exitUsage, `usage by "account"`, "usage", "--by", "account")

	c := s.client("amy")
	rows, err := c.Usage(context.Background(), api.UsageQuery{By: "project,machine", Period: "month", TZ: "Europe/Paris"})
	if err != nil || len(rows) != 2 || rows[0].Machine != "hpc1" || !rows[0].Charged.Equal(decimal.NewFromInt(600)) || rows[0].Period.IsZero() {
		t.Errorf("GET /v1/usage as amy: %+v, %v", rows, err)
	}
	if _, err := s.client("sched").Usage(context.Background(), api.UsageQuery{}); exitCode(err) != exitRefused {
		t.Errorf("GET /v1/usage as a scheduler: %v", err)
	}
	if _, err := c.Usage(context.Background(), api.UsageQuery{TZ: "Mars/Olympus"}); exitCode(err) != exitUsage {
		t.Errorf("an unknown zone: %v", err)
	}
}

// client is a Go client of the server with the key of the site's client
// name.
func (s *remoteSite) client(name string) *client.Client {
	s.t.Helper()
	raw, err := os.ReadFile(s.keyFile(name))
	if err != nil {
		s.t.Fatal(err)
	}
	key, err := auth.ParseKeyFile(raw)
	if err != nil {
		s.t.Fatal(err)
	}
	c, err := client.New(s.url, key, client.WithRetries(1, 0))
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}
