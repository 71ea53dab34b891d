package lien_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/lien"
)

// TestFinishedRecordsKeptOnce: on bbolt, a settled lien, a released one,
// a charge and a refunded charge are kept as references to the journal
// entries that carry them (ten bytes, not a second copy), and read back
// as the jobs left them; the audit finds a reference moved to an entry
// that does not carry its record last, before or after that entry.
func TestFinishedRecordsKeptOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bank.db")
	s, store := siteOnFile(t, path)
	s.MustDeposit("chem", "100000", time.Time{})
	s.mustPlace("j1", 4, 3600)
	charged := s.mustCharge(lien.ChargeSpec{Job: job("j1"), Usage: s.usage(4, 1800, 3600, 0, charge.Completed)})
	s.mustPlace("j2", 2, 3600)
	released, err := s.lb.Release(ctx, s.Req(), job("j2"))
	if err != nil {
		t.Fatal(err)
	}
	s.mustPlace("j3", 1, 60)
	three := s.mustCharge(lien.ChargeSpec{Job: job("j3"), Usage: s.usage(1, 60, 60, 0, charge.Completed)})
	refunded, err := s.lb.Refund(ctx, s.Req(), lien.RefundSpec{Charge: three.Charge.ID, Amount: dec("0.01")})
	if err != nil {
		t.Fatal(err)
	}
	s.MustDeposit("chem", "1", time.Time{})

	for _, c := range []struct {
		what string
		read func() (any, error)
		want any
	}{
		{"settled lien", func() (any, error) { return s.lb.JobLien(ctx, job("j1")) }, *charged.Lien},
		{"released lien", func() (any, error) { return s.lb.JobLien(ctx, job("j2")) }, released},
		{"charge", func() (any, error) { c, err := s.lb.Charges(ctx, job("j1")); return c[0], err }, charged.Charge},
		{"refunded charge", func() (any, error) { c, err := s.lb.Charges(ctx, job("j3")); return c[0], err }, refunded},
	} {
		got, err := c.read()
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(c.want)
		if err != nil || string(g) != string(w) {
			t.Errorf("%s: %s %v, want %s", c.what, g, err, w)
		}
	}

	// Where each lien and charge is kept, from a copy of the file.
	copyOf := func() string {
		t.Helper()
		f, err := os.Create(filepath.Join(t.TempDir(), "copy.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := store.Backup(ctx, f); err != nil {
			t.Fatal(err)
		}
		return f.Name()
	}
	refs := map[string]uint64{}
	bolttest.Edit(t, copyOf(), func(tx *bolt.Tx) error {
		for _, bucket := range []string{"liens", "charges"} {
			err := tx.Bucket([]byte(bucket)).ForEach(func(k, v []byte) error {
				if len(v) != 9 || v[0] != 0xE1 {
					t.Errorf("%s/%d is kept in full (%d bytes)", bucket, binary.BigEndian.Uint64(k), len(v))
					return nil
				}
				refs[bucket+string(k)] = binary.BigEndian.Uint64(v[1:])
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	lienRef := func(id uint64) string { return "liens" + string(binary.BigEndian.AppendUint64(nil, id)) }
	chargeRef := func(id uint64) string { return "charges" + string(binary.BigEndian.AppendUint64(nil, id)) }
	placed := refs[lienRef(charged.Lien.ID)] - 1 // j1's lien was placed by the entry before its charge
	last, err := s.Journal(ctx, ledger.JournalFilter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	deposit := last[0].Seq // carries no lien or charge

	for _, c := range []struct {
		what string
		key  string
		to   uint64
		says string
	}{
		{"a settled lien's reference moved to the entry that placed it", lienRef(charged.Lien.ID), placed,
			"lien 1 is stored as the one journal entry"},
		{"a charge's reference moved to a later entry without it", chargeRef(charged.Charge.ID), deposit,
			"charge 1 is stored as the one journal entry"},
		{"a refunded charge's reference moved back to its charge", chargeRef(refunded.ID), refs[chargeRef(refunded.ID)] - 1,
			fmt.Sprintf("charge %d: stored state differs from the journal's", refunded.ID)},
	} {
		t.Run(c.what, func(t *testing.T) {
			path := copyOf()
			bolttest.Edit(t, path, func(tx *bolt.Tx) error {
				bucket, key := c.key[:len(c.key)-8], c.key[len(c.key)-8:]
				return tx.Bucket([]byte(bucket)).Put([]byte(key), binary.BigEndian.AppendUint64([]byte{0xE1}, c.to))
			})
			rep, err := auditFile(t, path)
			if err != nil || !strings.Contains(strings.Join(rep.Problems, "\n"), c.says) {
				t.Errorf("audit: %v %q, want a problem saying %q", err, rep.Problems, c.says)
			}
		})
	}
}

// siteOnFile is newSite on a new bbolt bank at path.
func siteOnFile(t testing.TB, path string) (*site, *boltstore.Store) {
	var store *boltstore.Store
	s := newSiteOn(t, func(tb testing.TB) ledger.Store {
		var err error
		if store, err = boltstore.Open(path, boltstore.Options{Create: true}); err != nil {
			tb.Fatal(err)
		}
		return store
	})
	return s, store
}

// auditFile audits the bank at path in full, opened on its own.
func auditFile(t testing.TB, path string) (ledger.AuditReport, error) {
	t.Helper()
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := ledger.Open(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return l.Audit(context.Background(), ledger.AuditOptions{Full: true})
}

// TestJournalByJobAndKind: the journal of a job, or of kinds, is what
// filtering every entry gives, for job ids JSON escapes too (the scan
// looks for the id in the entries' bytes before decoding them).
func TestJournalByJobAndKind(t *testing.T) {
	ctx := context.Background()
	s := newSite(t)
	s.MustDeposit("chem", "100000", time.Time{})
	jobs := []string{"7", "77", `a<b&"c"`}
	for _, id := range jobs {
		s.mustPlace(id, 1, 60)
		s.mustCharge(lien.ChargeSpec{Job: job(id), Usage: s.usage(1, 60, 60, 0, charge.Completed)})
	}
	for range 2 { // a job released and placed again
		s.mustPlace("9", 1, 60)
		if _, err := s.lb.Release(ctx, s.Req(), job("9")); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.Journal(ctx, ledger.JournalFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []ledger.JournalFilter{
		{Job: "7"}, {Job: "77"}, {Job: jobs[2]}, {Job: "9"}, {Job: "x"}, {Job: "7", Machine: "other"},
		{Kinds: []ledger.Kind{ledger.KindCharge}}, {Kinds: []ledger.Kind{ledger.KindLienRelease, ledger.KindDeposit}},
		{Job: "9", Kinds: []ledger.Kind{ledger.KindLienPlace}},
	} {
		var want []uint64
		for _, e := range all {
			j := e.Job()
			if (f.Job == "" || j != nil && j.JobID == f.Job && (f.Machine == "" || j.Machine == f.Machine)) &&
				(len(f.Kinds) == 0 || slices.Contains(f.Kinds, e.Kind)) {
				want = append(want, e.Seq)
			}
		}
		got, err := s.Journal(ctx, f)
		var seqs []uint64
		for _, e := range got {
			seqs = append(seqs, e.Seq)
		}
		if err != nil || !slices.Equal(seqs, want) {
			t.Errorf("journal %+v: %v %v, want %v", f, seqs, err, want)
		}
	}
}
