package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/internal/packing"
	bolt "go.etcd.io/bbolt"
)

// TestDamagedFiles damages a bank file as disks and operators do and runs
// `ingot audit` and `ingot balance` on it, each in a process of its own:
// each case must end in exit 7 (the file is damaged) or exit 5 (the audit
// found problems), with a message naming the problem, never in a panic or
// a fault, and never in an audit that says OK. docs/storage.md shows the
// messages.
func TestDamagedFiles(t *testing.T) {
	sound := filepath.Join(t.TempDir(), "sound.db")
	b := onFile(t, sound)
	b.ok("init")
	b.ok("account", "create", "chem")
	b.ok("account", "create", "bio")
	for range 40 {
		b.ok("deposit", "chem", "10")
	}
	b.ok("--request-id", "the-receipt", "deposit", "bio", "4321")
	for range 40 {
		b.ok("deposit", "chem", "10")
	}
	pageSize, highWater := boltGeometry(t, sound)
	journalRoot, entry, answer := boltBytes(t, sound)

	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, raw []byte) []byte
		codes  []int  // the exit codes of audit and balance allowed
		says   string // what audit's output must say
	}{
		{"meta page 0", func(t *testing.T, raw []byte) []byte { raw[16+20] ^= 0x40; return raw },
			[]int{exitCorrupt}, "meta page 0 of"},
		{"meta page 1", func(t *testing.T, raw []byte) []byte { raw[pageSize+16+20] ^= 0x40; return raw },
			[]int{exitCorrupt}, "meta page 1 of"},
		{"cut into live pages", func(t *testing.T, raw []byte) []byte { return raw[:highWater*pageSize/2] },
			[]int{exitCorrupt}, "is cut short"},
		{"page header", func(t *testing.T, raw []byte) []byte {
			raw[journalRoot*pageSize+8] ^= 0x7f // the page's type
			return raw
		}, []int{exitCorrupt, exitAudit, exitOK}, "has unexpected type/flags"},
		{"journal entry's bytes", func(t *testing.T, raw []byte) []byte {
			return damagePacked(t, raw, entry, entryHeader, true)
		}, []int{exitAudit, exitOK}, "is not the hash of its stored bytes"},
		{"journal entry's packing", func(t *testing.T, raw []byte) []byte {
			return damagePacked(t, raw, entry, entryHeader, false)
		}, []int{exitAudit, exitOK}, "is not the hash of its stored bytes"},
		{"kept answer", func(t *testing.T, raw []byte) []byte {
			return changeDigit(t, raw, answer, "4321")
		}, []int{exitAudit, exitOK}, `the answer kept for request "the-receipt" of local:`},
	} {
		if tc.name == "kept answer" {
			// ... and its retry is refused rather than given the altered
			// receipt.
			defer func() {
				raw, _ := os.ReadFile(sound)
				path := filepath.Join(t.TempDir(), "retry.db")
				os.WriteFile(path, changeDigit(t, raw, answer, "4321"), 0o600)
				out, code := ingotProcess(t, "--db", path, "--request-id", "the-receipt", "deposit", "bio", "4321")
				t.Logf("retry: exit %d\n%s", code, out)
				if code != exitCorrupt || !strings.Contains(out, "is not the one journal entry") {
					t.Errorf("retry of the request whose kept answer was altered: exit %d\n%s", code, out)
				}
			}()
		}
		t.Run(tc.name, func(t *testing.T) {
			raw, err := os.ReadFile(sound)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "bank.db")
			if err := os.WriteFile(path, tc.damage(t, raw), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range []string{"audit", "balance"} {
				out, code := ingotProcess(t, "--db", path, cmd)
				t.Logf("ingot %s: exit %d\n%s", cmd, code, out)
				allowed := tc.codes
				if cmd == "audit" {
					allowed = []int{exitCorrupt, exitAudit}
				}
				if !containsInt(allowed, code) || strings.Contains(out, "goroutine ") || strings.Contains(out, "panic") {
					t.Errorf("ingot %s exited %d, want one of %v, and no panic:\n%s", cmd, code, allowed, out)
				}
				if cmd == "audit" && !strings.Contains(out, tc.says) {
					t.Errorf("ingot audit does not say %q:\n%s", tc.says, out)
				}
			}
		})
	}
}

// TestRandomDamage flips single bytes at random in the pages a bank uses:
// whatever each hits, `ingot audit` ends in exit 7 or 5, or, if it says
// OK, the balances are those of the sound file (the byte was in space no
// record uses): never a panic, a fault or a silent change.
func TestRandomDamage(t *testing.T) {
	sound := filepath.Join(t.TempDir(), "sound.db")
	b := onFile(t, sound)
	b.ok("init")
	b.ok("account", "create", "chem")
	for range 30 {
		b.ok("deposit", "chem", "10")
	}
	want := b.ok("balance")
	pageSize, highWater := boltGeometry(t, sound)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 24 {
		raw, err := os.ReadFile(sound)
		if err != nil {
			t.Fatal(err)
		}
		at := 2*pageSize + rng.IntN((highWater-2)*pageSize)
		raw[at] ^= byte(1 + rng.IntN(255))
		path := filepath.Join(t.TempDir(), "bank.db")
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		out, code := ingotProcess(t, "--db", path, "audit")
		switch {
		case code == exitCorrupt || code == exitAudit:
		case code == exitOK:
			if got, _ := ingotProcess(t, "--db", path, "balance"); got != want {
				t.Errorf("flip %d at byte %d: audit OK but the balances changed:\n%s\nwant\n%s", i, at, got, want)
			}
		default:
			t.Errorf("flip %d at byte %d (page %d): audit exited %d:\n%s", i, at, at/pageSize, code, out)
		}
	}
}

// ingotProcess runs ingot as a process of its own (this test binary, see
// TestMain) and returns its output and exit code.
func ingotProcess(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envRunAsIngot+"=1", "INGOT_SERVER=", "INGOT_KEY_FILE=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	stdin, err := cmd.StdinPipe() // closed when the test ends: see TestMain
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// boltGeometry reads the page size and the high-water page number from
// the first meta page of a sound file.
func boltGeometry(t *testing.T, path string) (pageSize, highWater int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(binary.LittleEndian.Uint32(raw[16+8:])), int(binary.LittleEndian.Uint64(raw[16+40:]))
}

// entryHeader is the bytes of a journal entry's value before its packed
// part (ledger/boltstore's doc.go): the entry's SHA-256 and time.
const entryHeader = 32 + 8

// boltBytes finds, in a sound bank, the journal bucket's root page and the
// stored bytes of the entry and the kept answer of request the-receipt.
func boltBytes(t *testing.T, path string) (journalRoot int, entry, answer []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		journal := tx.Bucket([]byte("journal"))
		journalRoot = int(journal.Root())
		var seq []byte
		c := tx.Bucket([]byte("requests")).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if bytes.HasSuffix(k, []byte("\x00the-receipt")) {
				answer = bytes.Clone(v)
				seq = v[32:40]
			}
		}
		if seq == nil {
			t.Fatal("no request the-receipt")
		}
		entry = bytes.Clone(journal.Get(seq))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return journalRoot, entry, answer
}

// changeDigit changes the first digit of the first "digits" in value,
// wherever value's bytes are in raw (changeByte).
func changeDigit(t *testing.T, raw, value []byte, digits string) []byte {
	t.Helper()
	in := bytes.Index(value, []byte(digits))
	if in < 0 {
		t.Fatalf("no %s in %q", digits, value)
	}
	return changeByte(t, raw, value, in) // 4321 becomes 5321
}

// changeByte adds one to byte in of value wherever value's bytes are in
// raw: in the page that holds the value now, and in pages bbolt freed that
// held it before.
func changeByte(t *testing.T, raw, value []byte, in int) []byte {
	t.Helper()
	found := 0
	for at := bytes.Index(raw, value); at >= 0; {
		raw[at+in]++
		found++
		next := bytes.Index(raw[at+1:], value)
		if next < 0 {
			break
		}
		at += 1 + next
	}
	if found == 0 {
		t.Fatal("the value is not in the file")
	}
	return raw
}

// damagePacked changes one byte of the packed part of value (from
// offset packed on: internal/packing's first byte, then zstd's frame),
// chosen so that it still unpacks, into other bytes, or, with !unpacks, so
// that it does not; wherever value's bytes are in raw (changeByte).
func damagePacked(t *testing.T, raw, value []byte, packed int, unpacks bool) []byte {
	t.Helper()
	want, err := packing.Unpack(value[packed:])
	if err != nil || !packing.Packed(value[packed:]) {
		t.Fatalf("the value is not packed from byte %d: %v", packed, err)
	}
	in := -1
	for i := len(value) - 1; i > packed && in < 0; i-- {
		damaged := bytes.Clone(value)
		damaged[i]++
		got, err := packing.Unpack(damaged[packed:])
		if unpacks && err == nil && !bytes.Equal(got, want) || !unpacks && err != nil {
			in = i
		}
	}
	if in < 0 {
		t.Fatalf("no byte of %x changes it so (unpacks: %v)", value, unpacks)
	}
	return changeByte(t, raw, value, in)
}
