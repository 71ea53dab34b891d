package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// shared is the test package's server, started by the first DB.
var shared struct {
	once   sync.Once
	server *Server
	bin    string
	err    error
}

// Main runs a test package's tests and stops its shared server after
// them: func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.server != nil {
		if err := shared.server.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// DB makes a new database, owned by a new role with a password, on the
// test package's server, and returns its connection string (a URL:
// postgres://role:password@127.0.0.1:port/database). Both are dropped when
// the test ends.
func DB(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() {
		if shared.bin, shared.err = findBinaries(); shared.err == nil {
			shared.server, shared.err = start(shared.bin)
		}
	})
	if shared.bin == "" {
		unavailable(t, "%v", shared.err)
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.server.NewDB(t)
}

var dbs atomic.Int64

// NewDB makes a new database on s, owned by a new role with a password,
// and returns its connection string; both are dropped when the test ends.
func (s *Server) NewDB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("ingot_test_%d", dbs.Add(1))
	secret := make([]byte, 12)
	rand.Read(secret)
	password := hex.EncodeToString(secret)
	// The names are ours, and the password hex: nothing needs quoting.
	s.exec(t, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", name, password),
		fmt.Sprintf("CREATE DATABASE %s OWNER %s", name, name))
	t.Cleanup(func() { s.dropDB(t, name) })
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s", name, password, s.Port, name)
}

// dropDB drops a test's database and role, whoever is still connected,
// unless the test has stopped the server.
func (s *Server) dropDB(t testing.TB, name string) {
	if s.stopped.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := s.admin(ctx)
	if err != nil {
		t.Errorf("pgtest: drop database %s: %v", name, err)
		return
	}
	defer conn.Close(context.Background())
	for _, sql := range []string{"DROP DATABASE " + name + " WITH (FORCE)", "DROP ROLE " + name} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Errorf("pgtest: %s: %v", sql, err)
		}
	}
}

// Exec runs statements on the database url names, with its credentials,
// failing the test at the first that fails.
func Exec(t testing.TB, url string, statements ...string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range statements {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
