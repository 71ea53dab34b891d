package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/client"
)

// TestPostgresFailover is a bank in PostgreSQL on a primary with a
// synchronous standby, served by two `ingot serve` processes whose
// connection string names both hosts (target_session_attrs=read-write).
// First, 1,000 liens at once through both servers against an account that
// covers exactly 100: exactly 100 are placed. Then sixteen schedulers run
// jobs (a lien, then a charge) through both servers, each request resent
// with its request id until it is answered; the primary is killed with
// SIGKILL in the middle of it and the standby promoted. The servers carry
// on without a restart; at the end every acknowledged request is in the
// journal exactly once, no job has a second lien or charge, the balance is
// what the jobs add up to, and ingot audit --full is clean.
func TestPostgresFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover test runs a primary, a standby and two servers; skipped with -short")
	}
	primary := pgtest.Start(t)
	url := primary.NewDB(t)
	standby := primary.Standby(t)
	both := strings.Replace(url, fmt.Sprintf("127.0.0.1:%d", primary.Port), fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", primary.Port, standby.Port), 1) +
		"?target_session_attrs=read-write"

	b := onStore(t, both)
	b.ok("init")
	b.ok("account", "create", "chem")
	b.ok("project", "create", "chem.lab1")
	b.ok("account", "create", "phys")
	b.ok("machine", "add", "hpc1", "--cores", "32")
	b.ok("user", "add", "amy", "--member", "chem.lab1", "--member", "phys", "--default-project", "chem.lab1")
	b.ok("deposit", "chem", "1000000000000")
	b.ok("deposit", "phys", "1440000") // 100 liens of 4 processors for an hour
	dir := t.TempDir()
	serverKey := filepath.Join(dir, "server.key")
	key := b.clientKey("slurm", "--role", "scheduler", "--scope", "hpc1", "--server-key", serverKey)
	var servers []*serverProcess
	for i := range 2 {
		logs := filepath.Join(dir, fmt.Sprint("server", i))
		if err := os.Mkdir(logs, 0o700); err != nil {
			t.Fatal(err)
		}
		servers = append(servers, startServerWith(t, logs, "--store", both, "serve", "--listen", "127.0.0.1:0", "--server-key", serverKey))
	}
	clients := []*client.Client{servers[0].client(key), servers[1].client(key)}

	t.Run("1000 liens, 100 covered", func(t *testing.T) {
		var placed, refused atomic.Int64
		var wg sync.WaitGroup
		jobs := make(chan int)
		for range 100 {
			wg.Go(func() {
				for i := range jobs {
					place, _ := cycleOf(fmt.Sprint("p", i))
					place.Project = "phys"
					_, err := clients[i%2].PlaceLien(context.Background(), fmt.Sprint("p", i), place)
					switch {
					case err == nil:
						placed.Add(1)
					case client.IsCode(err, api.CodeInsufficientFunds):
						refused.Add(1)
					default:
						t.Errorf("lien p%d: %v", i, err)
					}
				}
			})
		}
		for i := range 1000 {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		if placed.Load() != 100 || refused.Load() != 900 {
			t.Errorf("%d liens placed and %d refused, want 100 and 900", placed.Load(), refused.Load())
		}
	})

	t.Run("failover under load", func(t *testing.T) {
		const workers, jobsEach = 16, 30 // two requests a job: halfway is workers*jobsEach
		var acked atomic.Int64
		var mu sync.Mutex
		var requests []string // the acknowledged requests' ids
		halfway := make(chan struct{})
		var once sync.Once
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				c := clients[w%2]
				for j := range jobsEach {
					id := fmt.Sprintf("w%d-%d", w, j)
					place, charge := cycleOf(id)
					for _, op := range []struct {
						id   string
						send func() error
					}{
						{id + "-lien", func() error { _, err := c.PlaceLien(context.Background(), id+"-lien", place); return err }},
						{id + "-charge", func() error { _, err := c.Charge(context.Background(), id+"-charge", charge); return err }},
					} {
						if err := untilAnswered(op.send); err != nil {
							t.Errorf("request %s: %v", op.id, err)
							return
						}
						mu.Lock()
						requests = append(requests, op.id)
						mu.Unlock()
						if acked.Add(1) == workers*jobsEach {
							once.Do(func() { close(halfway) })
						}
					}
				}
			})
		}
		select {
		case <-halfway:
		case <-time.After(2 * time.Minute):
			t.Fatalf("%d requests answered in 2 minutes", acked.Load())
		}
		primary.Kill(t)
		atKill := acked.Load()
		time.Sleep(500 * time.Millisecond) // the servers find the primary gone
		standby.Promote(t)
		wg.Wait()
		if t.Failed() {
			return
		}

		var entries []ledger.Entry
		b.json(&entries, "journal")
		seen := map[string]int{}
		jobs := map[string]int{}
		for _, e := range entries {
			if e.Actor != "client:slurm" {
				continue
			}
			seen[e.RequestID]++
			if e.Lien != nil && e.Kind == ledger.KindLienPlace {
				jobs["lien "+e.Lien.JobID]++
			}
			if e.Charge != nil && e.Kind == ledger.KindCharge {
				jobs["charge "+e.Charge.JobID]++
			}
		}
		for _, id := range requests {
			if seen[id] != 1 {
				t.Errorf("acknowledged request %s is in the journal %d times", id, seen[id])
			}
		}
		for job, n := range jobs {
			if n != 1 {
				t.Errorf("%s: %d entries", job, n)
			}
		}
		var nb []ledger.NodeBalance
		b.json(&nb, "balance", "chem")
		// Each job is charged 4 processors for half an hour.
		if want := dec(t, fmt.Sprint(1000000000000-workers*jobsEach*7200)); len(nb) != 1 || !nb[0].Amount.Equal(want) || !nb[0].Reserved.IsZero() {
			t.Errorf("chem: %+v, want %s and nothing reserved", nb, want)
		}
		t.Logf("%d requests answered, %d of them after the primary was killed", len(requests), int64(len(requests))-atKill)
	})

	for _, s := range servers {
		s.stop()
	}
	if out := b.ok("audit", "--full"); !strings.Contains(out, "audit: OK") {
		t.Errorf("audit: %s", out)
	}
}

// untilAnswered sends a request (with the same request id each time)
// until the bank answers it, as a scheduler does: an answer that does not
// come, or a server waiting for its database, is tried again.
func untilAnswered(send func() error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := send()
		var e *api.Error
		if err == nil || (errors.As(err, &e) && e.Code != api.CodeUnavailable) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
