package multisite

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/faultproxy"
	"github.com/ingot-hpc/ingot/internal/ingotproc"
	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/proto/client"
)

// Config says what a run does.
type Config struct {
	// Engine is "bbolt" (every bank a file) or "postgres" (the second
	// site's bank on a PostgreSQL server of its own, internal/pgtest).
	Engine string
	// Duration is how long the load and the faults run.
	Duration time.Duration
	// Binary is the ingot to run; "" builds ./cmd/ingot.
	Binary string
	// Depositors is how many of the central bank's operators deposit at
	// the sites at once (default 2).
	Depositors int
	// ReportPeriod is the sites' usage report period (ingot serve
	// --usage-report-period; default 5 s), short so that a run sees many.
	ReportPeriod time.Duration
	// Seed seeds the choices of amounts, faults and when they strike.
	Seed uint64
	// Out receives the report.
	Out io.Writer
}

func (c *Config) defaults() {
	if c.Engine == "" {
		c.Engine = "bbolt"
	}
	if c.Duration <= 0 {
		c.Duration = 30 * time.Second
	}
	if c.Depositors == 0 {
		c.Depositors = 2
	}
	if c.ReportPeriod == 0 {
		c.ReportPeriod = 5 * time.Second
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Out == nil {
		c.Out = os.Stdout
	}
}

// The banks: the central bank grants allocations at the two sites.
const (
	central = "central"
	siteA   = "sitea"
	siteB   = "siteb"
)

// account is the account at each site the central bank may deposit into.
const account = "chem"

// admin is each bank's admin client, which the test acts as.
const admin = "e2e"

// sites are the two sites.
var sites = []string{siteA, siteB}

// other is the site that is not site.
func other(site string) string {
	if site == siteA {
		return siteB
	}
	return siteA
}

// bank is one of the three banks: its command line on its own file or
// database, its server, and an admin client of it.
type bank struct {
	name      string
	cli       ingotproc.Command
	serverKey string
	srv       *ingotproc.Server
	admin     *client.Client
	adminKey  string
	schedKey  string // a site's scheduler client's key file
}

// serveFlags are b's server's flags, reporting usage every period.
func (b *bank) serveFlags(period time.Duration) []string {
	return []string{"--server-key", b.serverKey, "--usage-report-period", period.String()}
}

// link is the way one bank calls another: through a proxy of its own,
// whose address is the callee's URL in the caller's peer record.
type link struct {
	from, to string
	proxy    *faultproxy.Proxy
	// busy says the link carries transactions while the load runs, so
	// that its faults strike: every link does (the sites' to the central
	// bank carry their usage reports); the central bank's questions to the
	// sites asked once all is healed are reconcile's.
	busy bool
}

func (l *link) String() string { return l.from + "→" + l.to }

// run is one run of the e2e test.
type run struct {
	t     testing.TB
	cfg   Config
	dir   string
	banks map[string]*bank
	links []*link
	began time.Time // when the load began

	faults       faultCount
	liensRefused atomic.Int64 // jobs a site refused for want of credits
	mu           sync.Mutex
	acked        []deposit // the deposits the central bank acknowledged
	charges      []charged // the jobs' final charges the sites acknowledged
	// visitorsRefunded is what the refunds of the other site's visitors'
	// jobs returned at each site, in its credits (checkTraceback).
	visitorsRefunded map[string]decimal.Decimal
}

// Report is what a run did and found.
type Report struct {
	Engine     string
	Load       time.Duration
	Operations int
	PerSite    map[string]int
	// Charges are the jobs' final charges the sites acknowledged on their
	// own account, Refunds the refunds of parts of them; LiensRefused,
	// the jobs a site refused for want of credits.
	Charges, Refunds, LiensRefused int
	// VisitorCharges are the visitors' jobs' charges the sites
	// acknowledged, VisitorRefunds the refunds of parts of them;
	// Forwarded and ForwardRefused, the transactions of visitors' jobs
	// (liens, charges, releases, refunds, withdrawals) their home banks
	// applied and refused; Withdrawn, the liens the sites withdrew
	// (sent, unanswered, and beyond the credit line while the home bank
	// was away); NotSent, those they refused without sending (beyond the
	// credit line while the home bank was known away).
	VisitorCharges, VisitorRefunds, Forwarded, ForwardRefused, Withdrawn, NotSent int
	Faults                                                                        map[string]int
	// Struck is how many times a link's fault acted on a connection (a
	// connection closed or reset, bytes delayed or held).
	Struck  int
	Lost    int
	Doubled int
	// PendingHealed is how many transactions the banks had pending once
	// everything was healed, Drain how long they took to go; ReportsIn
	// how long after that the sites' reports through the end of the drain
	// had reached the central bank.
	PendingHealed int
	Drain         time.Duration
	ReportsIn     time.Duration
	// Reports are the usage reports the central bank received from each
	// site, ReportedNet what they say was spent there.
	Reports     map[string]int
	ReportedNet map[string]decimal.Decimal
	// Reconciled is how many `ingot peer reconcile` runs found no
	// difference (both banks of each link), Agreed the transactions they
	// matched; Statements, the sites whose `ingot peer statement` at both
	// ends said what was acknowledged.
	Reconciled, Agreed, Statements int
	Audits                         int
}

// Run runs the three banks under load and faults, heals everything, and
// checks them; a deposit lost or doubled, credits not conserved, a
// transaction left pending or a failed audit fails tb. It prints the
// report on cfg.Out.
func Run(tb testing.TB, cfg Config) *Report {
	tb.Helper()
	cfg.defaults()
	r := &run{t: tb, cfg: cfg, dir: tb.TempDir(), banks: map[string]*bank{}, visitorsRefunded: map[string]decimal.Decimal{}}
	if cfg.Binary == "" {
		r.cfg.Binary = ingotproc.Build(tb, tb.TempDir())
	}
	r.setUp()
	rep := &Report{Engine: cfg.Engine}
	r.began = time.Now()
	r.load()
	rep.Load = time.Since(r.began)
	r.heal(rep)
	r.check(rep)
	rep.Faults = r.faults.snapshot()
	rep.LiensRefused = int(r.liensRefused.Load())
	for _, l := range r.links {
		_, struck := l.proxy.Stats()
		rep.Struck += struck
	}
	r.report(rep)
	return rep
}

// freeAddr is a loopback address no one listens on now, so that a bank's
// server can be given its port before it starts and keep it across
// restarts: the proxies in front of it and its peers' records name it.
func freeAddr(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// setUp makes the three banks, their peers and the proxies between them,
// and starts their servers.
func (r *run) setUp() {
	t := r.t
	keys := filepath.Join(r.dir, "keys")
	if err := os.MkdirAll(keys, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{central, siteA, siteB} {
		b := &bank{name: name, serverKey: filepath.Join(keys, name+"-server.key"), adminKey: filepath.Join(keys, name+"-admin.key")}
		global := []string{"--db", filepath.Join(r.dir, name+".db")}
		switch {
		case r.cfg.Engine == "postgres" && name == siteB:
			global = []string{"--store", pgtest.Start(t).NewDB(t)}
		case r.cfg.Engine != "bbolt" && r.cfg.Engine != "postgres":
			t.Fatalf("multisite: engine %q: bbolt or postgres", r.cfg.Engine)
		}
		b.cli = ingotproc.Command{Bin: r.cfg.Binary, Global: global}
		b.srv = &ingotproc.Server{Name: name, Bin: r.cfg.Binary, Global: global, Addr: freeAddr(t),
			Flags: b.serveFlags(r.cfg.ReportPeriod), Log: filepath.Join(r.dir, name+".log")}
		b.cli.Must(t, "init")
		b.cli.Must(t, "client", "add", admin, "--role", "admin", "--key-out", b.adminKey, "--server-key", b.serverKey)
		r.banks[name] = b
	}
	// The central bank deposits at each site, into its account.
	for _, site := range sites {
		r.banks[site].cli.Must(t, "account", "create", account)
		r.addLink(central, site, true)
		r.addLink(site, central, true)
		r.agree(keys, central, site, nil, []string{account})
	}
	// Each site's visitors' project is homed at the other site's account
	// (traceback): each site's agreement with the other names its account.
	r.addLink(siteA, siteB, true)
	r.addLink(siteB, siteA, true)
	r.agree(keys, siteA, siteB, []string{account}, []string{account})
	for _, site := range sites {
		r.homeVisitors(r.banks[site])
		r.banks[site].schedKey = r.setUpJobs(r.banks[site], keys)
	}
	for _, b := range r.banks {
		b.srv.MustStart(t)
		t.Cleanup(func() {
			if b.srv.Running() {
				b.srv.Kill(t)
			}
		})
		k, err := readKey(b.adminKey)
		if err != nil {
			t.Fatal(err)
		}
		b.admin, err = client.New(b.srv.URL, k, client.WithHTTPClient(&http.Client{Timeout: 15 * time.Second}), client.WithRetries(1, 0))
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("multisite: %s banks set up in %s; seed %d", r.cfg.Engine, r.dir, r.cfg.Seed)
}

// addLink puts a proxy in front of to's server for from's calls.
func (r *run) addLink(from, to string, busy bool) {
	p, err := faultproxy.New(r.banks[to].srv.Addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { p.Close() })
	r.links = append(r.links, &link{from: from, to: to, proxy: p, busy: busy})
}

// url is the URL from's peer record gives to: its proxy's.
func (r *run) url(from, to string) string {
	for _, l := range r.links {
		if l.from == from && l.to == to {
			return "http://" + l.proxy.Addr()
		}
	}
	r.t.Fatalf("multisite: no link %s→%s", from, to)
	return ""
}

// agree makes two banks peers with the README's commands, on their
// files before their servers start: each agreement names the projects
// the other bank may act on (aProjects: a's, bProjects: b's); each bank
// makes the key the other signs with and takes the other's.
func (r *run) agree(keys, a, b string, aProjects, bProjects []string) {
	t := r.t
	ba, ab := filepath.Join(keys, b+"-for-"+a+".key"), filepath.Join(keys, a+"-for-"+b+".key")
	args := []string{"peer", "add", a, "--url", r.url(b, a), "--key-out", ba, "--server-key", r.banks[b].serverKey}
	for _, p := range bProjects {
		args = append(args, "--project", p)
	}
	r.banks[b].cli.Must(t, args...)
	args = []string{"peer", "add", b, "--url", r.url(a, b), "--key-out", ab, "--peer-key", ba, "--server-key", r.banks[a].serverKey}
	for _, p := range aProjects {
		args = append(args, "--project", p)
	}
	r.banks[a].cli.Must(t, args...)
	r.banks[b].cli.Must(t, "peer", "key", a, ab, "--server-key", r.banks[b].serverKey)
}

// report prints what the run did and found.
func (r *run) report(rep *Report) {
	p := func(format string, args ...any) { fmt.Fprintf(r.cfg.Out, format+"\n", args...) }
	engines := "central, sitea and siteb on bank files"
	if rep.Engine == "postgres" {
		engines = "central and sitea on bank files, siteb on PostgreSQL"
	}
	total := 0
	for _, n := range rep.Faults {
		total += n
	}
	p("multisite e2e (%s), seed %d: %s of load and faults", engines, r.cfg.Seed, rep.Load.Round(time.Second))
	p("  operations:      %d deposits at the sites acknowledged (sitea %d, siteb %d); %d jobs charged at the sites on their own account (%d of them refunded in part), %d visitors' jobs charged to the other site (%d of them refunded in part; %d of their liens, charges, refunds and withdrawals applied there, %d refused, %d liens withdrawn, %d refused at the site while it was away, not sent); %d liens refused for want of credits",
		rep.Operations, rep.PerSite[siteA], rep.PerSite[siteB], rep.Charges, rep.Refunds, rep.VisitorCharges, rep.VisitorRefunds, rep.Forwarded, rep.ForwardRefused, rep.Withdrawn, rep.NotSent, rep.LiensRefused)
	p("  faults injected: %d: %s; the links' faults struck %d times", total, formatCounts(rep.Faults), rep.Struck)
	p("  lost:            %d", rep.Lost)
	p("  doubled:         %d", rep.Doubled)
	p("  time to drain:   %s (%d transactions pending once healed); the sites' usage reports through it at the central bank %s later",
		rep.Drain.Round(time.Millisecond), rep.PendingHealed, rep.ReportsIn.Round(time.Millisecond))
	p("  usage reports:   %d received by the central bank, one per %s (sitea %d, siteb %d), saying %s and %s spent at sitea and siteb, as charged there",
		rep.Reports[siteA]+rep.Reports[siteB], r.cfg.ReportPeriod, rep.Reports[siteA], rep.Reports[siteB], rep.ReportedNet[siteA], rep.ReportedNet[siteB])
	p("  peer reconcile:  %d of 6 without a difference (%d transactions agree); peer statement: %d of 2 sites as acknowledged", rep.Reconciled, rep.Agreed, rep.Statements)
	p("  audit --full:    %d of %d banks clean", rep.Audits, len(r.banks))
}
