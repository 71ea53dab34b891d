package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/lien"
)

// upgrades lists the banks of earlier schemas under testdata (README.md
// says how each was made): from schema 2 on they are upgraded in place,
// schema 1 is refused.
var upgrades = []struct {
	file   string
	schema uint64
	// refused is what the refusal of a file not upgraded says to run,
	// followed by the file's path.
	refused string
	// answered says that a retry of a request made before the upgrade
	// gets its first answer: the engine of schema 8 kept answers this
	// one reads. Earlier ones are refused, never applied again.
	answered bool
	// usedUp says the bank has an account phys whose one allocation a
	// charge used up (mkbank.sh's usedup).
	usedUp bool
}{
	{file: "schema1-clean.db", schema: 1, refused: "git worktree add /tmp/ingot-schema1 7640d43 && go -C /tmp/ingot-schema1 build ./cmd/ingot && /tmp/ingot-schema1/ingot --db "},
	{file: "schema2-clean.db", schema: 2},
	{file: "schema3-clean.db", schema: 3},
	{file: "schema4-clean.db", schema: 4},
	{file: "schema5-clean.db", schema: 5},
	{file: "schema6-clean.db", schema: 6},
	{file: "schema7-clean.db", schema: 7},
	{file: "schema8-clean.db", schema: 8, answered: true},
	{file: "schema8-late-clean.db", schema: 8, answered: true},
	{file: "schema9-clean.db", schema: 9, answered: true},
	{file: "schema10-clean.db", schema: 10, answered: true},
	{file: "schema11-clean.db", schema: 11, answered: true},
	{file: "schema12-clean.db", schema: 12, answered: true},
	{file: "schema13-clean.db", schema: 13, answered: true},
	{file: "schema14-clean.db", schema: 14, answered: true},
	{file: "schema16-clean.db", schema: 16, answered: true},
	{file: "schema17-clean.db", schema: 17, answered: true, usedUp: true},
}

// wantBalances are those of every upgradable bank while job-2 ran, from
// the commands that made it (README.md): chem had deposits of 1000 and
// 500, gave 200 to bio, was charged 60 for job-1 (2 processors × 30 s at
// the default rate of 1 a processor-second) and refunded 10 of it, and
// job-2's lien (1 processor × 300 s) holds 300; bio had the 200, less a
// withdrawal of 10.50, and a deposit of 7.
var wantBalances = map[string]struct{ amount, reserved, balance string }{
	"chem": {"1250", "300", "950"},
	"bio":  {"196.50", "0", "196.50"},
}

// TestUpgrades opens each bank of an earlier schema. One that is upgraded
// is refused read-only; opened read-write, it is copied beside itself
// byte for byte, upgraded, audits clean with the balances it had, its
// node index built; a request made before is not applied again, new ones
// are, and the next open upgrades nothing. One that is not upgraded is
// refused with what to run, and left as it was.
func TestUpgrades(t *testing.T) {
	files, err := filepath.Glob("testdata/schema*-clean.db.gz")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, u := range upgrades {
		listed = append(listed, "testdata/"+u.file+".gz")
	}
	slices.Sort(files)
	slices.Sort(listed)
	if !slices.Equal(files, listed) {
		t.Fatalf("testdata holds %v, the test lists %v", files, listed)
	}
	for _, u := range upgrades {
		t.Run(u.file, func(t *testing.T) {
			dir := t.TempDir()
			path := unpack(t, dir, u.file)
			before := readFile(t, path)
			want := ledger.ErrUpgradeNeeded
			if u.refused != "" {
				want = boltstore.ErrOldSchema
			}
			if _, err := boltstore.Open(path, boltstore.Options{ReadOnly: true}); !errors.Is(err, want) {
				t.Errorf("read-only open: %v, want %v", err, want)
			}
			sameBytes(t, path, before, "the file after a read-only open")
			if u.refused != "" {
				_, err := boltstore.Open(path, boltstore.Options{})
				says := []string{fmt.Sprintf("%s has schema %d", path, u.schema), u.refused + path}
				if !errors.Is(err, boltstore.ErrOldSchema) || !strings.Contains(err.Error(), says[0]) || !strings.Contains(err.Error(), says[1]) {
					t.Errorf("open: %v\nwant ErrOldSchema saying %q", err, says)
				}
				sameBytes(t, path, before, "the refused file")
				onlyFiles(t, dir, u.file)
				return
			}
			checkUpgrade(t, path, before, u.schema, u.answered)
			if u.usedUp {
				checkUsedUp(t, path)
			}
		})
	}
}

// checkUpgrade opens the bank at path, of schema from and made of before,
// and checks its upgrade (TestUpgrades).
func checkUpgrade(t *testing.T, path string, before []byte, from uint64, answered bool) {
	ctx := context.Background()
	var reported []string
	opts := boltstore.Options{OnUpgrade: func(from, to uint64, backup string) {
		reported = append(reported, fmt.Sprintf("%d to %d, backup %s", from, to, backup))
	}}
	store, err := boltstore.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	backup := fmt.Sprintf("%s.schema%d.bak", path, from)
	if want := fmt.Sprintf("%d to %d, backup %s", from, boltstore.SchemaVersion, backup); !slices.Equal(reported, []string{want}) {
		t.Errorf("upgrades reported: %q, want %q", reported, want)
	}
	sameBytes(t, backup, before, "the backup")
	// The clock is set at the time the bank was made, in its journal.
	var now time.Time
	l, err := ledger.Open(ctx, store, ledger.WithClock(func() time.Time { return now }))
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	defer l.Close()
	all, err := l.Journal(ctx, ledger.JournalFilter{})
	if err != nil || len(all) == 0 {
		t.Fatalf("journal: %d entries, %v", len(all), err)
	}
	made := all[len(all)-1].Time
	now = made.Add(time.Minute)
	// Now, from the stored state; and at a past time, from the history.
	for _, at := range []time.Time{{}, made.Add(30 * time.Second)} {
		for account, want := range wantBalances {
			b, err := l.BalanceAt(ctx, account, at)
			if err != nil {
				t.Fatal(err)
			}
			got := []decimal.Decimal{b.Amount, b.Reserved, b.Balance.Balance}
			for i, w := range []string{want.amount, want.reserved, want.balance} {
				if !got[i].Equal(decimal.RequireFromString(w)) {
					t.Errorf("%s at %v: amount, reserved, balance %v, want %+v", account, at, got, want)
					break
				}
			}
		}
	}
	if rep, err := l.Audit(ctx, ledger.AuditOptions{Full: true}); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("audit after the upgrade: %v %v", rep.Problems, err)
	}
	checkIndex(t, l, all)
	// A retry of the deposit of 7 made before the upgrade.
	r, err := l.Deposit(ctx, ledger.Request{Actor: "local:root", ID: "legacy-req-1"}, ledger.DepositSpec{Account: "bio", Amount: decimal.NewFromInt(7)})
	switch {
	case answered && (err != nil || r.Seq != 15):
		t.Errorf("retry of a request answered before the upgrade: entry %d, %v; want the first answer, entry 15", r.Seq, err)
	case !answered && (!errors.Is(err, ledger.ErrRequestConflict) || !strings.Contains(err.Error(), "earlier version")):
		t.Errorf("retry of a request answered before the upgrade: %v, want it refused as one of an earlier version", err)
	}
	if _, err := l.Deposit(ctx, ledger.Request{Actor: "t", ID: "new"}, ledger.DepositSpec{Account: "bio", Amount: decimal.NewFromInt(1)}); err != nil {
		t.Fatal(err)
	}
	if b, err := l.BalanceAt(ctx, "bio", time.Time{}); err != nil || !b.Amount.Equal(decimal.RequireFromString("197.50")) {
		t.Errorf("bio after one more deposit of 1: %v %v, want 197.50", b.Amount, err)
	}
	// The older bank's node records have no owners; ownership and a
	// priority set now are kept beside the policy they had, and journaled
	// (the audit below replays them).
	lab1, err := l.Node(ctx, "chem.lab1")
	if err != nil || lab1.Policy.QuotaKind != ledger.QuotaDynamic || !lab1.Policy.Ownership.IsZero() || lab1.Policy.Priority != 0 {
		t.Fatalf("chem.lab1 after the upgrade: %+v, %v", lab1.Policy, err)
	}
	owns := lab1.Policy
	owns.Ownership, owns.Priority = decimal.NewFromInt(100), 3
	if _, err := l.ModifyNode(ctx, ledger.Request{Actor: "t", ID: "owns"}, "chem.lab1", ledger.NodeChange{Policy: &owns}); err != nil {
		t.Fatal(err)
	}
	if s, err := l.Shares(ctx, "chem"); err != nil || !s.Owners || s.Highest != "chem.lab1" {
		t.Errorf("chem's split with an owner: %+v, %v", s, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	store, err = boltstore.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	if len(reported) != 1 {
		t.Errorf("the open after the upgrade reported %q", reported[1:])
	}
	onlyFiles(t, filepath.Dir(path), filepath.Base(path), filepath.Base(backup))
	auditFile(t, path, boltstore.Options{})
}

// checkIndex checks that the journals of a node, a job and a kind, read
// through the journal's index, are the entries of the whole journal that
// concern them.
func checkIndex(t *testing.T, l *ledger.Ledger, all []ledger.Entry) {
	t.Helper()
	for _, f := range []ledger.JournalFilter{{Node: "chem.lab1"}, {Job: "job-1"}, {Kinds: []ledger.Kind{ledger.KindDeposit}}} {
		var want, got []uint64
		for _, e := range all {
			job := e.Job()
			if f.Node != "" && slices.Contains(ledger.IndexTerms(e), f.Node) ||
				f.Job != "" && job != nil && job.JobID == f.Job ||
				f.Kinds != nil && e.Kind == f.Kinds[0] {
				want = append(want, e.Seq)
			}
		}
		indexed, err := l.Journal(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range indexed {
			got = append(got, e.Seq)
		}
		if len(want) < 3 || !slices.Equal(got, want) {
			t.Errorf("the journal of %+v after the upgrade: entries %v, want %v", f, got, want)
		}
	}
}

// TestUpgradeKeepsEarlierBackups: a backup of the same schema already
// beside the file (an earlier upgrade's, restored from) is not
// overwritten; the new one takes the next free name.
func TestUpgradeKeepsEarlierBackups(t *testing.T) {
	dir := t.TempDir()
	path := unpack(t, dir, "schema7-clean.db")
	before := readFile(t, path)
	earlier := []byte("an earlier backup")
	if err := os.WriteFile(path+".schema7.bak", earlier, 0o600); err != nil {
		t.Fatal(err)
	}
	var backup string
	store, err := boltstore.Open(path, boltstore.Options{OnUpgrade: func(_, _ uint64, b string) { backup = b }})
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	if backup != path+".schema7.bak.1" {
		t.Errorf("backup %q, want %s.schema7.bak.1", backup, path)
	}
	sameBytes(t, path+".schema7.bak", earlier, "the earlier backup")
	sameBytes(t, path+".schema7.bak.1", before, "the new backup")
}

// TestUpgradeOnFullDisk: a backup that does not fit on the file system
// refuses the upgrade with the system's reason, is removed, and leaves
// the bank as it was; once there is space, the upgrade goes ahead. It
// needs root, to mount a small tmpfs (CI runs as root).
func TestUpgradeOnFullDisk(t *testing.T) {
	dir := smallDisk(t, "1m")
	path := unpack(t, dir, "schema5-clean.db")
	before := readFile(t, path)
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for chunk := make([]byte, 4096); err == nil; {
		_, err = f.Write(chunk)
	}
	f.Close()
	_, err = boltstore.Open(path, boltstore.Options{})
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "back up before the upgrade from schema 5: write "+path+".schema5.bak") {
		t.Errorf("open on a full disk: %v, want ENOSPC writing the backup", err)
	}
	sameBytes(t, path, before, "the bank after the refused upgrade")
	onlyFiles(t, dir, "filler", filepath.Base(path))
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatalf("open with space again: %v", err)
	}
	store.Close()
	sameBytes(t, path+".schema5.bak", before, "the backup")
}

// TestNewerSchemaIsRefused: a bank made by a newer ingot is refused, read
// or written, and left as it was.
func TestNewerSchemaIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bank.db")
	makeBank(t, path, 1)
	newer := uint64(boltstore.SchemaVersion + 1)
	bolttest.SetSchema(t, path, newer)
	before := readFile(t, path)
	for _, opts := range []boltstore.Options{{}, {ReadOnly: true}} {
		_, err := boltstore.Open(path, opts)
		says := fmt.Sprintf("made by a newer ingot: %s has schema %d, and this ingot reads schemas up to %d: upgrade ingot", path, newer, boltstore.SchemaVersion)
		if !errors.Is(err, boltstore.ErrNewerSchema) || !strings.Contains(err.Error(), says) {
			t.Errorf("open (%+v): %v, want ErrNewerSchema saying %q", opts, err, says)
		}
	}
	sameBytes(t, path, before, "the refused file")
	onlyFiles(t, dir, "bank.db")
}

// TestLogLeftIsRefused: a bank of schema 7 left with its write-ahead log
// by a crash is refused with the commands that fold the log into the
// file, and nothing is changed.
func TestLogLeftIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := unpack(t, dir, "schema7-crashed.db")
	unpack(t, dir, "schema7-crashed.db-wal.1")
	before := readFile(t, path)
	_, err := boltstore.Open(path, boltstore.Options{})
	for _, says := range []string{
		path + " (schema 7) hold changes the file may not have yet",
		"Open and close the bank once with the ingot that made it (schema 7: commits 80de303 to 9416433)",
		"git worktree add /tmp/ingot-schema7 9416433 && go -C /tmp/ingot-schema7 build ./cmd/ingot && /tmp/ingot-schema7/ingot --db " + path + " audit.",
	} {
		if !errors.Is(err, boltstore.ErrLogLeft) || !strings.Contains(err.Error(), says) {
			t.Errorf("open: %v\nwant ErrLogLeft saying %q", err, says)
		}
	}
	sameBytes(t, path, before, "the refused file")
	onlyFiles(t, dir, "schema7-crashed.db", "schema7-crashed.db-wal.1")
}

// unpack writes testdata/NAME.gz to dir/NAME.
func unpack(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	bolttest.WriteOldBank(t, path, name)
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameBytes checks that the file at path holds want.
func sameBytes(t *testing.T, path string, want []byte, what string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v", what, err)
	} else if !bytes.Equal(got, want) {
		t.Errorf("%s (%s, %d bytes) is not the file as it was (%d bytes)", what, path, len(got), len(want))
	}
}

// onlyFiles checks that dir holds the files named and no other.
func onlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}

// checkUsedUp checks phys of an upgraded bank of mkbank.sh's usedup
// (checkUpgrade has audited it in full, its used-up allocation among
// those indexed apart): its allocation, used up by job-3's charge of 60,
// lists with the account's, and a refund of 20 makes it usable again,
// what the charge took kept with the others' sums; the audit finds both
// changes right.
func checkUsedUp(t *testing.T, path string) {
	ctx := context.Background()
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, store)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	defer l.Close()
	b, err := l.BalanceAt(ctx, "phys", time.Time{})
	if err != nil || len(b.Allocations) != 1 || !b.Allocations[0].UsedUp() || !b.Amount.IsZero() {
		t.Fatalf("phys after the upgrade: %+v, %v; want its one allocation, used up", b, err)
	}
	// job-3's charge is the bank's second.
	if _, err := lien.New(l).Refund(ctx, ledger.Request{Actor: "t", ID: "revive"}, lien.RefundSpec{Charge: 2, Amount: decimal.NewFromInt(20)}); err != nil {
		t.Fatal(err)
	}
	if b, err := l.BalanceAt(ctx, "phys", time.Time{}); err != nil || !b.Amount.Equal(decimal.NewFromInt(20)) {
		t.Errorf("phys after a refund of 20: %v, %v", b.Amount, err)
	}
	if rep, err := l.Audit(ctx, ledger.AuditOptions{Full: true}); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("audit after the refund: %v %v", rep.Problems, err)
	}
}
