package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/ingotproc"
	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/proto/auth"
)

// The bank the soak runs on: three accounts, two of them with projects,
// two machines, three users, and an API client per worker.
var (
	accounts = []string{"chem", "phys", "bio"}
	// users: name, the projects it is a member of (the first is its
	// default).
	users = []struct {
		name     string
		projects []string
	}{
		{"amy", []string{"chem.lab1", "chem"}},
		{"bob", []string{"phys.lab1"}},
		{"cara", []string{"chem.lab2", "bio"}},
	}
	machines = []string{"hpc1", "hpc2"}
	// readNodes are what the readers look at.
	readNodes = []string{"chem", "chem.lab1", "chem.lab2", "phys", "phys.lab1", "bio"}
)

// initialDeposit is each account's first allocation: enough for every job
// a soak runs, so that no lien is refused for lack of funds.
const initialDeposit = "1000000000000"

// setUp makes the bank with the command line, on the file or database
// cli names, and the API clients' keys in dir. It returns the keys by
// client name.
func setUp(tb testing.TB, cli ingotproc.Command, dir, serverKey string, clients []clientSpec) map[string]auth.Key {
	tb.Helper()
	cli.Must(tb, "init")
	cli.Must(tb, "machine", "add", "hpc1", "--cores", "128")
	cli.Must(tb, "machine", "add", "hpc2", "--cores", "64")
	for _, n := range []string{"chem", "phys", "bio"} {
		cli.Must(tb, "account", "create", n)
	}
	for _, n := range []string{"chem.lab1", "chem.lab2", "phys.lab1"} {
		cli.Must(tb, "project", "create", n)
	}
	for _, u := range users {
		args := []string{"user", "add", u.name, "--default-project", u.projects[0]}
		for _, p := range u.projects {
			args = append(args, "--member", p)
		}
		cli.Must(tb, args...)
	}
	// One window for every allocation, so that transfers between the
	// accounts top up the allocation of the same window rather than make
	// new ones.
	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Hour).Format(time.RFC3339)
	for _, a := range accounts {
		cli.Must(tb, "deposit", a, initialDeposit, "--start", start)
	}
	keys := map[string]auth.Key{}
	for _, c := range clients {
		file := filepath.Join(dir, c.name+".key")
		args := []string{"client", "add", c.name, "--role", c.role, "--key-out", file, "--server-key", serverKey}
		for _, s := range c.scopes {
			args = append(args, "--scope", s)
		}
		cli.Must(tb, args...)
		raw, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		key, err := auth.ParseKeyFile(raw)
		if err != nil {
			tb.Fatalf("key of %s: %v", c.name, err)
		}
		keys[c.name] = key
	}
	return keys
}

// clientSpec is an API client the soak makes.
type clientSpec struct {
	name   string
	role   string
	scopes []string
}

// postgres is the PostgreSQL side of a soak on that engine: a primary
// with a synchronous standby, and the bank's connection string naming
// both, so that the servers follow a failover.
type postgres struct {
	primary, standby *pgtest.Server
	url              string // the bank's database on the primary, as pgtest made it
}

func startPostgres(tb testing.TB) *postgres {
	tb.Helper()
	p := &postgres{primary: pgtest.Start(tb)}
	p.url = p.primary.NewDB(tb)
	p.standby = p.primary.Standby(tb)
	return p
}

// both is the connection string naming the primary and the standby, for
// the servers: libpq's several hosts, the one that takes writes chosen.
func (p *postgres) both() string {
	return p.hosts(p.primary.Port, p.standby.Port) + "?target_session_attrs=read-write"
}

// current is the connection string of the primary alone.
func (p *postgres) current() string { return p.hosts(p.primary.Port) }

// hosts is the bank's URL with its host:port replaced by 127.0.0.1 on
// each of ports.
func (p *postgres) hosts(ports ...int) string {
	var hs []string
	for _, port := range ports {
		hs = append(hs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	first := pgPort(p.url)
	return strings.Replace(p.url, fmt.Sprintf("127.0.0.1:%d", first), strings.Join(hs, ","), 1)
}

// pgPort is the port of the first host of a postgres:// URL made by pgtest.
func pgPort(url string) int {
	_, rest, _ := strings.Cut(url, "@127.0.0.1:")
	var port int
	fmt.Sscanf(rest, "%d", &port)
	return port
}

// failover kills the primary as the loss of its machine would, promotes
// the standby, and gives the new primary a synchronous standby of its
// own, so that the next failover has one to go to.
func (p *postgres) failover(tb testing.TB) {
	tb.Helper()
	p.primary.Kill(tb)
	time.Sleep(500 * time.Millisecond) // the servers find the primary gone
	p.standby.Promote(tb)
	p.primary = p.standby
	p.standby = p.primary.Standby(tb)
}

// amount is a decimal from a string known to be one.
func amount(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// background is the context of the soak's requests: each is bounded by
// its client's timeout.
var background = context.Background()
