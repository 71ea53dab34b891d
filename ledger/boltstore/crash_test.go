package boltstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
)

// The crash test runs this test binary again as a child that writes to the
// bank until it is killed.
const (
	envCrashChild = "INGOT_CRASH_CHILD"
	envCrashRound = "INGOT_CRASH_ROUND"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envCrashChild); path != "" {
		crashChild(path, os.Getenv(envCrashRound))
		return
	}
	os.Exit(m.Run())
}

// crashChild makes deposits and transfers from several goroutines (so that
// commits are grouped) and prints "ack REQUEST SEQ" once each is durable.
func crashChild(path, round string) {
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	l, err := ledger.Open(context.Background(), store)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				req := ledger.Request{Actor: "crash", ID: fmt.Sprintf("r%s-g%d-%d", round, g, i)}
				amount := decimal.New(int64(1+rand.IntN(999)), -2)
				from, to := "a", "b"
				if rand.IntN(2) == 0 {
					from, to = to, from
				}
				var r ledger.Receipt
				var err error
				if i%3 == 0 {
					r, err = l.Deposit(context.Background(), req, ledger.DepositSpec{Account: from, Amount: amount.Mul(decimal.NewFromInt(10))})
				} else {
					r, err = l.Transfer(context.Background(), req, ledger.TransferSpec{From: from, To: to, Amount: amount})
				}
				if errors.Is(err, ledger.ErrInsufficientFunds) {
					continue
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				out.Lock()
				fmt.Printf("ack %s %d\n", req.ID, r.Seq)
				out.Unlock()
			}
		}()
	}
	wg.Wait()
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test kills a child process twenty times; skipped with -short")
	}
	path := filepath.Join(t.TempDir(), "bank.db")
	store, err := boltstore.Open(path, boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.Init(context.Background(), store, ledger.Settings{Precision: 2}, ledger.Request{Actor: "test"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	store.Close()
	withLedger(t, path, func(l *ledger.Ledger) {
		for _, n := range []string{"a", "b"} {
			if _, err := l.CreateNode(context.Background(), ledger.Request{Actor: "test"}, ledger.NodeSpec{Name: n}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Deposit(context.Background(), ledger.Request{Actor: "test"}, ledger.DepositSpec{Account: n, Amount: decimal.NewFromInt(100)}); err != nil {
				t.Fatal(err)
			}
		}
	})
	acked := map[string]uint64{}
	for round := 0; round < 20; round++ {
		for id, seq := range runChildUntilKilled(t, path, round, 20+rand.IntN(200)) {
			acked[id] = seq
		}
		withLedger(t, path, func(l *ledger.Ledger) {
			rep, err := l.Audit(context.Background())
			if err != nil {
				t.Fatalf("round %d: audit: %v", round, err)
			}
			if len(rep.Problems) > 0 {
				t.Fatalf("round %d: audit after SIGKILL:\n%s", round, strings.Join(rep.Problems, "\n"))
			}
			entries, err := l.Journal(context.Background(), ledger.JournalFilter{})
			if err != nil {
				t.Fatal(err)
			}
			bySeq := map[uint64]string{}
			for _, e := range entries {
				bySeq[e.Seq] = e.RequestID
			}
			for id, seq := range acked {
				if bySeq[seq] != id {
					t.Fatalf("round %d: acknowledged request %s (entry %d) is missing after the crash; entry %d is %q", round, id, seq, seq, bySeq[seq])
				}
			}
		})
	}
	t.Logf("%d acknowledged requests survived 20 SIGKILLs", len(acked))
}

// runChildUntilKilled starts the child, kills it with SIGKILL once it has
// acknowledged n requests, and returns every acknowledgement it printed.
func runChildUntilKilled(t *testing.T, path string, round, n int) map[string]uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envCrashChild+"="+path, envCrashRound+"="+strconv.Itoa(round))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acks := map[string]uint64{}
	scanner := bufio.NewScanner(stdout)
	for scanner.Scan() {
		var id string
		var seq uint64
		if _, err := fmt.Sscanf(scanner.Text(), "ack %s %d", &id, &seq); err != nil {
			t.Fatalf("child printed %q", scanner.Text())
		}
		acks[id] = seq
		if len(acks) == n {
			cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	err = cmd.Wait()
	if len(acks) < n {
		t.Fatalf("round %d: child stopped after %d acknowledgements: %v\n%s", round, len(acks), err, stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("round %d: child was not killed: %v\n%s", round, err, stderr.String())
	}
	return acks
}

// withLedger opens the bank at path for fn and closes it.
func withLedger(t *testing.T, path string, fn func(*ledger.Ledger)) {
	t.Helper()
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l, err := ledger.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	fn(l)
}
