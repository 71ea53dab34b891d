package lien_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/pgstore/pgstoretest"
	"github.com/ingot-hpc/ingot/lien"
)

// archiveSite is the site TestArchive archives: on a bank file at path,
// or on PostgreSQL when TestOnPostgres runs it.
func archiveSite(t *testing.T, path string) (s *site, store ledger.Store) {
	if strings.HasPrefix(t.Name(), onPostgres+"/") {
		s = newSiteOn(t, func(tb testing.TB) ledger.Store { store = pgstoretest.Open(tb); return store })
		return s, store
	}
	return siteOnFile(t, path)
}

// TestArchive: a bank's first month moved to an archive leaves a bank
// whose audits, full and incremental, are clean, and an archive that is
// a bank of its own, audited clean; statements, journals and balances of
// any time are those of the bank before, read from the archive when it is
// given and refused, saying which archive they need, when it is not; a
// charge made before the boundary and refunded after it, and a lien
// placed before it and charged after it, come out right. A second archive
// takes the next month from the first's boundary on. An archive of
// another bank, or one whose entries were changed, is found out.
func TestArchive(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, store := archiveSite(t, filepath.Join(dir, "bank.db"))
	s.MustDeposit("chem", "100000000", time.Time{})
	month := func(m int, from int) {
		for i := from; i < from+12; i++ {
			id := fmt.Sprint("m", m, "-", i)
			s.mustPlace(id, 2, 600)
			s.mustCharge(lien.ChargeSpec{Job: job(id), Usage: s.usage(2, 300, 600, 0, charge.Completed)})
			s.Clock.Advance(time.Hour)
		}
	}
	start := s.Clock.Now()
	month(1, 0)
	s.mustPlace("early", 1, 60)
	early := s.mustCharge(lien.ChargeSpec{Job: job("early"), Usage: s.usage(1, 60, 60, 0, charge.Completed)})
	s.mustPlace("spanning", 1, 90*24*3600) // placed in month 1, charged in month 3
	s.MustDeposit("bio", "500", time.Time{})
	s.Clock.Advance(32 * 24 * time.Hour)
	second := s.Clock.Now()
	month(2, 0)
	if _, err := s.lb.Refund(ctx, s.Req(), lien.RefundSpec{Charge: early.Charge.ID, Amount: dec("0.01")}); err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(32 * 24 * time.Hour)
	third := s.Clock.Now()
	month(3, 0)
	s.mustCharge(lien.ChargeSpec{Job: job("spanning"), Usage: s.usage(1, 60, 90*24*3600, 0, charge.Completed)})
	end := s.Clock.Now().Add(time.Second)

	type query struct {
		name string
		run  func(*ledger.Ledger) (any, error)
	}
	statement := func(from, to time.Time) func(*ledger.Ledger) (any, error) {
		return func(l *ledger.Ledger) (any, error) { return l.Statement(ctx, "chem", from, to, false) }
	}
	queries := []query{
		{"statement of month 1", statement(start, second)},
		{"statement of months 1 to 3", statement(start, end)},
		{"statement of month 3", statement(third, end)},
		{"statement of month 2", statement(second, third)},
		{"balance in month 1", func(l *ledger.Ledger) (any, error) { return l.BalanceAt(ctx, "chem", start.Add(5*time.Hour)) }},
		{"balance in month 2", func(l *ledger.Ledger) (any, error) { return l.BalanceAt(ctx, "chem", second.Add(5*time.Hour)) }},
		{"balance in month 3", func(l *ledger.Ledger) (any, error) { return l.BalanceAt(ctx, "chem", third.Add(5*time.Hour)) }},
		{"journal of chem.lab1 in month 1", func(l *ledger.Ledger) (any, error) {
			return l.Journal(ctx, ledger.JournalFilter{Node: "chem.lab1", From: start, To: second})
		}},
		{"last five of chem.lab1", func(l *ledger.Ledger) (any, error) {
			return l.Journal(ctx, ledger.JournalFilter{Node: "chem.lab1", Limit: 5})
		}},
		{"charges of month 1", func(l *ledger.Ledger) (any, error) {
			return lien.New(l).FindCharges(ctx, lien.ChargeFilter{Node: "chem", Since: start, Until: second})
		}},
		{"the lien of job m1-0, in month 1", func(l *ledger.Ledger) (any, error) { return lien.New(l).JobLien(ctx, job("m1-0")) }},
		{"the charges of job early, of month 1 refunded in month 2", func(l *ledger.Ledger) (any, error) {
			return lien.New(l).Charges(ctx, job("early"))
		}},
		{"charges of month 3", func(l *ledger.Ledger) (any, error) {
			return lien.New(l).FindCharges(ctx, lien.ChargeFilter{Node: "chem", Since: third, Until: end})
		}},
	}
	answer := func(l *ledger.Ledger, q query) (string, error) {
		v, err := q.run(l)
		raw, _ := json.Marshal(v)
		return string(raw), err
	}
	before := map[string]string{}
	for _, q := range queries {
		got, err := answer(s.Ledger, q)
		if err != nil {
			t.Fatalf("%s: %v", q.name, err)
		}
		before[q.name] = got
	}

	archive := func(l *ledger.Ledger, at time.Time, name string) (ledger.ArchiveReport, *boltstore.Store) {
		t.Helper()
		dst, err := boltstore.Open(filepath.Join(dir, name), boltstore.Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dst.Close() })
		// The answers kept for retries are dropped after a week, as ingot
		// serve drops them.
		if _, err := l.PruneRequests(ctx, at, 1<<20); err != nil {
			t.Fatal(err)
		}
		rep, err := l.Archive(ctx, at, dst, name, nil)
		if err != nil {
			t.Fatalf("archive before %s: %v (%+v)", at, err, rep)
		}
		return rep, dst
	}
	rep, first := archive(s.Ledger, second, "first.db")
	if rep.From != 1 || rep.Liens == 0 || rep.Charges == 0 {
		t.Errorf("the first archive: %+v", rep)
	}
	audit := func(what string, l *ledger.Ledger, full bool) {
		t.Helper()
		r, err := l.Audit(ctx, ledger.AuditOptions{Full: full})
		if err != nil || len(r.Problems) > 0 || r.From != rep.Boundary.Seq+1 && full {
			t.Errorf("%s (full %v): from %d, %v %q", what, full, r.From, err, r.Problems)
		}
	}
	audit("the bank after archiving", s.Ledger, true)
	audit("the bank after archiving", s.Ledger, false)

	withArchive := func(archive ledger.Store) *ledger.Ledger {
		t.Helper()
		l, err := ledger.Open(ctx, store, ledger.WithArchive(archive), ledger.WithClock(s.Clock.Now))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	joined := withArchive(first)
	for _, q := range queries {
		got, err := answer(joined, q)
		if err != nil || got != before[q.name] {
			t.Errorf("%s with the archive: %v\n%s\nwant\n%s", q.name, err, got, before[q.name])
		}
		got, err = answer(s.Ledger, q)
		// A job's records are found by its job index, which knows no time:
		// without the archive, an archived job has none (the bank keeps a
		// charge refunded after the boundary).
		job := strings.HasPrefix(q.name, "the ")
		needs := !job && (strings.Contains(q.name, "month 1") || strings.Contains(q.name, "1 to 3"))
		switch {
		case job && strings.Contains(q.name, "lien") && !errors.Is(err, ledger.ErrNotFound):
			t.Errorf("%s without the archive: %v, want not found", q.name, err)
		case job && strings.Contains(q.name, "lien"):
		case needs && (!errors.Is(err, ledger.ErrArchived) || !strings.Contains(err.Error(), "first.db")):
			t.Errorf("%s without the archive: %v, want ErrArchived naming first.db", q.name, err)
		case !needs && (err != nil || got != before[q.name]):
			t.Errorf("%s without the archive: %v\n%s\nwant\n%s", q.name, err, got, before[q.name])
		}
	}

	// The bank goes on; a second archive takes month 2.
	s.Clock.Advance(32 * 24 * time.Hour)
	month(4, 0)
	audit("the bank going on", s.Ledger, false)
	firstEnd := rep.Boundary.Seq
	rep, second2 := archive(s.Ledger, third, "second.db")
	if rep.From != firstEnd+1 {
		t.Errorf("the second archive starts at %d, want %d", rep.From, firstEnd+1)
	}
	audit("the bank after the second archive", s.Ledger, true)
	joined = withArchive(second2)
	for _, q := range queries[2:4] { // statements of months 3 and 2
		if got, err := answer(joined, q); err != nil || got != before[q.name] {
			t.Errorf("%s with the second archive: %v\n%s\nwant\n%s", q.name, err, got, before[q.name])
		}
	}
	if _, err := answer(joined, queries[0]); !errors.Is(err, ledger.ErrArchived) || !strings.Contains(err.Error(), "first.db") {
		t.Errorf("month 1 with the second archive only: %v, want ErrArchived naming first.db", err)
	}

	// The first archive is read with the second as the bank.
	older, err := ledger.Open(ctx, second2, ledger.WithArchive(first), ledger.WithClock(s.Clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := answer(older, queries[0]); err != nil || got != before[queries[0].name] {
		t.Errorf("%s, the second archive read as the bank with the first: %v\n%s\nwant\n%s", queries[0].name, err, got, before[queries[0].name])
	}

	// Another bank's archive is refused; a changed entry in an archive is
	// found by its audit.
	if _, err := ledger.Open(ctx, store, ledger.WithArchive(first)); err == nil || !strings.Contains(err.Error(), "is not the one this bank starts after") {
		t.Errorf("the bank opened with its first archive, not its second: %v", err)
	}
	first.Close()
	bolttest.EditEntry(t, filepath.Join(dir, "first.db"), 3, func(e *ledger.Entry) { e.Actor = "tset" })
	r, err := auditFile(t, filepath.Join(dir, "first.db"))
	if err != nil || !strings.Contains(strings.Join(r.Problems, "\n"), "journal: entry 3: stored hash") {
		t.Errorf("the archive with entry 3 changed: %v %q", err, r.Problems)
	}
}

// TestArchiveOfRecordsKeptWhole: a bank whose finished liens and charges
// were stored whole (by an ingot before references), archived twice:
// the second boundary still counts those the first left in the bank, and
// the bank audits clean after each archive.
func TestArchiveOfRecordsKeptWhole(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, store := archiveSite(t, filepath.Join(dir, "bank.db"))
	s.MustDeposit("chem", "100000000", time.Time{})
	var months []time.Time
	for m := range 3 {
		for i := range 4 {
			id := fmt.Sprint("w", m, "-", i)
			s.mustPlace(id, 2, 600)
			s.mustCharge(lien.ChargeSpec{Job: job(id), Usage: s.usage(2, 300, 600, 0, charge.Completed)})
			s.Clock.Advance(time.Hour)
		}
		s.Clock.Advance(32 * 24 * time.Hour)
		months = append(months, s.Clock.Now())
	}
	// Every lien and charge stored whole, as before references.
	err := store.Update(ctx, func(tx ledger.Tx) error {
		var liens []ledger.Lien
		var charges []ledger.Charge
		if err := tx.Liens(func(l ledger.Lien) (bool, error) { liens = append(liens, l); return true, nil }); err != nil {
			return err
		}
		if err := tx.Charges(func(c ledger.Charge) (bool, error) { charges = append(charges, c); return true, nil }); err != nil {
			return err
		}
		for _, l := range liens {
			if err := tx.PutLien(l, 0); err != nil {
				return err
			}
		}
		for _, c := range charges {
			if err := tx.PutCharge(c, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"first.db", "second.db"} {
		dst, err := boltstore.Open(filepath.Join(dir, name), boltstore.Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.PruneRequests(ctx, months[i], 1<<20); err != nil {
			t.Fatal(err)
		}
		if rep, err := s.Archive(ctx, months[i], dst, name, nil); err != nil {
			t.Fatalf("archive %s: %v (%+v)", name, err, rep.AuditedBeforehand.Problems)
		}
		dst.Close()
		if r, err := s.Audit(ctx, ledger.AuditOptions{Full: true}); err != nil || len(r.Problems) > 0 {
			t.Errorf("the bank after %s: %v %q", name, err, r.Problems)
		}
	}
}
