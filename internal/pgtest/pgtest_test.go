package pgtest_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingot-hpc/ingot/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestDB: each test gets a database of its own on the shared server,
// reached over TCP with its role's password, and refused with another.
func TestDB(t *testing.T) {
	ctx := context.Background()
	first, second := pgtest.DB(t), pgtest.DB(t)
	if first == second {
		t.Fatalf("two databases share a connection string: %s", first)
	}
	for _, url := range []string{first, second} {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
			t.Errorf("create a table in %s: %v", url, err)
		}
		conn.Close(ctx)
	}
	i := strings.LastIndex(first, "@")
	j := strings.LastIndex(first[:i], ":")
	if _, err := pgx.Connect(ctx, first[:j]+":wrong"+first[i:]); err == nil || !strings.Contains(err.Error(), "password authentication failed") {
		t.Errorf("a wrong password: %v", err)
	}
}

// TestStartAndStop: a server of the test's own answers, and once stopped
// it is gone with its directory.
func TestStartAndStop(t *testing.T) {
	s := pgtest.Start(t)
	url := s.NewDB(t)
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Data); !os.IsNotExist(err) {
		t.Errorf("the data directory is left after Stop: %v", err)
	}
	if _, err := pgx.Connect(context.Background(), url); err == nil {
		t.Error("the server answers after Stop")
	}
}

// TestStandby: a synchronous standby has every committed change; killed,
// the primary is gone, and the standby promoted takes writes with the
// roles and databases it had.
func TestStandby(t *testing.T) {
	ctx := context.Background()
	primary := pgtest.Start(t)
	url := primary.NewDB(t)
	standby := primary.Standby(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	primary.Kill(t)
	if _, err := pgx.Connect(ctx, url); err == nil {
		t.Fatal("the killed primary answers")
	}
	standby.Promote(t)
	moved := strings.Replace(url, fmt.Sprintf(":%d/", primary.Port), fmt.Sprintf(":%d/", standby.Port), 1)
	conn, err = pgx.Connect(ctx, moved)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if _, err := conn.Exec(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatalf("a write on the promoted standby: %v", err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 2 {
		t.Errorf("%d rows (%v), want 2", n, err)
	}
}
