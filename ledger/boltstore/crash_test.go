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
	// envCheckChild names the bank checkChild audits.
	envCheckChild = "INGOT_CHECK_CHILD"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envCrashChild); path != "" {
		crashChild(path, os.Getenv(envCrashRound))
		return
	}
	if path := os.Getenv(envCheckChild); path != "" {
		checkChild(path)
		return
	}
	os.Exit(m.Run())
}

// crashChild makes deposits and transfers from several goroutines (so that
// commits are grouped) and prints "ack REQUEST SEQ" once each is durable,
// and "err MESSAGE" for a change that failed other than for lack of funds.
// It makes the bank if there is none: accounts a and b with 100 each.
func crashChild(path, round string) {
	l, err := openOrMake(path)
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
				out.Lock()
				if err != nil {
					fmt.Printf("err %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
				} else {
					fmt.Printf("ack %s %d\n", req.ID, r.Seq)
				}
				out.Unlock()
				if err != nil {
					time.Sleep(10 * time.Millisecond)
				}
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
	acked := map[string]uint64{}
	for round := 0; round < 20; round++ {
		acks, errs := runChildUntilKilled(t, path, round, 20+rand.IntN(200), nil)
		if len(errs) > 0 {
			t.Fatalf("round %d: changes failed: %q", round, errs)
		}
		for id, seq := range acks {
			acked[id] = seq
		}
		checkBank(t, path, fmt.Sprintf("round %d", round), acked)
	}
	t.Logf("%d acknowledged requests survived 20 SIGKILLs", len(acked))
}

// openOrMake opens the bank at path, made with accounts a and b (100
// each) if there is none.
func openOrMake(path string) (*ledger.Ledger, error) {
	ctx := context.Background()
	store, err := boltstore.Open(path, boltstore.Options{Create: true})
	if err != nil {
		return nil, err
	}
	l, err := ledger.Open(ctx, store)
	if errors.Is(err, ledger.ErrNotInitialized) {
		if err = ledger.Init(ctx, store, ledger.Settings{Precision: 2}, ledger.Request{Actor: "test"}, time.Now()); err != nil {
			return nil, err
		}
		if l, err = ledger.Open(ctx, store); err != nil {
			return nil, err
		}
		for _, n := range []string{"a", "b"} {
			if _, err := l.CreateNode(ctx, ledger.Request{Actor: "test"}, ledger.NodeSpec{Name: n}); err != nil {
				return nil, err
			}
			if _, err := l.Deposit(ctx, ledger.Request{Actor: "test"}, ledger.DepositSpec{Account: n, Amount: decimal.NewFromInt(100)}); err != nil {
				return nil, err
			}
		}
	}
	return l, err
}

// runChildUntilKilled starts the child, kills it with SIGKILL once it has
// acknowledged n requests (or, if atAck is set, once atAck, called after
// each acknowledgement, says so), and returns every acknowledgement and
// failure it printed.
func runChildUntilKilled(t *testing.T, path string, round, n int, atAck func(acks int) bool) (map[string]uint64, []string) {
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
	var errs []string
	killed := false
	scanner := bufio.NewScanner(stdout)
	for scanner.Scan() {
		line := scanner.Text()
		if msg, ok := strings.CutPrefix(line, "err "); ok {
			errs = append(errs, msg)
			if !killed && atAck != nil && atAck(-len(errs)) {
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
			continue
		}
		var id string
		var seq uint64
		if _, err := fmt.Sscanf(line, "ack %s %d", &id, &seq); err != nil {
			t.Fatalf("child printed %q", line)
		}
		acks[id] = seq
		if !killed && (len(acks) == n || atAck != nil && atAck(len(acks))) {
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("round %d: child stopped after %d acknowledgements: %v\n%s", round, len(acks), err, stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("round %d: child was not killed: %v\n%s", round, err, stderr.String())
	}
	return acks, errs
}

// checkChild audits the bank at path and prints "problem TEXT" for each
// problem the audit finds and "entry SEQ REQUEST" for each journal entry:
// what a test checks after a crash, from another process, as the bank's
// file may be where the test itself must not map it (lazyfs).
func checkChild(path string) {
	store, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	l, err := ledger.Open(context.Background(), store)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rep, err := l.Audit(context.Background(), ledger.AuditOptions{Full: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, p := range rep.Problems {
		fmt.Printf("problem %s\n", strings.ReplaceAll(p, "\n", " "))
	}
	entries, err := l.Journal(context.Background(), ledger.JournalFilter{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, e := range entries {
		fmt.Printf("entry %d %s\n", e.Seq, e.RequestID)
	}
}

// checkBank runs checkChild on path and fails the test unless the audit is
// clean and every acknowledged request is in the journal as the entry it
// was acknowledged as.
func checkBank(t *testing.T, path, when string, acked map[string]uint64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envCheckChild+"="+path)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if exit, ok := err.(*exec.ExitError); ok {
			stderr = exit.Stderr
		}
		t.Fatalf("%s: check: %v\n%s", when, err, stderr)
	}
	bySeq := map[uint64]string{}
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSuffix(line, "\n")
		if p, ok := strings.CutPrefix(line, "problem "); ok {
			t.Errorf("%s: audit: %s", when, p)
			continue
		}
		var seq uint64
		var id string
		fmt.Sscanf(line, "entry %d %s", &seq, &id)
		bySeq[seq] = id
	}
	for id, seq := range acked {
		if bySeq[seq] != id {
			t.Fatalf("%s: acknowledged request %s (entry %d) is missing; entry %d is %q", when, id, seq, seq, bySeq[seq])
		}
	}
}
