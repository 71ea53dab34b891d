package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingot-hpc/ingot/internal/pgtest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
)

func TestLoadMigrations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  string // "" for success
	}{
		{"numbered", []string{"0001_a.sql", "0002_b.sql"}, ""},
		{"a gap", []string{"0001_a.sql", "0003_c.sql"}, "0003_c.sql: want number 0002"},
		{"not from 1", []string{"0002_b.sql"}, "want number 0001"},
		{"badly named", []string{"0001_a.sql", "2_b.sql"}, "2_b.sql is not named NNNN_what.sql"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for _, f := range tc.files {
				fsys["m/"+f] = &fstest.MapFile{Data: []byte("SELECT 1;")}
			}
			ms, err := loadMigrations(fsys, "m")
			if tc.want == "" && (err != nil || len(ms) != len(tc.files)) {
				t.Errorf("%v %v", ms, err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if len(bankMigrations) == 0 || SchemaVersion != bankMigrations[len(bankMigrations)-1].version {
		t.Errorf("the built-in migrations: %d, schema %d", len(bankMigrations), SchemaVersion)
	}
}

// TestUpgrade: a bank written at one schema is upgraded when an ingot with
// a later migration opens it (which it is told of), with its data and a
// clean audit; an ingot of the earlier schema then refuses it, and one
// still serving it refuses every change.
func TestUpgrade(t *testing.T) {
	ctx := context.Background()
	url := pgtest.DB(t)
	v1 := bankMigrations
	v2 := append(v1[:len(v1):len(v1)], migration{version: uint64(len(v1) + 1), name: "next.sql",
		sql: "ALTER TABLE nodes ADD COLUMN note text; CREATE INDEX nodes_by_note ON nodes (note);"})
	old, err := open(ctx, url, Options{Create: true}, v1)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := ledger.Init(ctx, old, ledger.Settings{Precision: 2}, ledger.Request{Actor: "test"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	ol, err := ledger.Open(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ol.CreateNode(ctx, ledger.Request{Actor: "test", ID: "1"}, ledger.NodeSpec{Name: "chem"}); err != nil {
		t.Fatal(err)
	}
	deposit := ledger.DepositSpec{Account: "chem", Amount: ledgertest.Dec(t, "10")}
	if _, err := ol.Deposit(ctx, ledger.Request{Actor: "test", ID: "2"}, deposit); err != nil {
		t.Fatal(err)
	}

	var upgraded []uint64
	s, err := open(ctx, url, Options{OnUpgrade: func(from, to uint64) { upgraded = append(upgraded, from, to) }}, v2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(upgraded) != 2 || upgraded[0] != uint64(len(v1)) || upgraded[1] != uint64(len(v2)) {
		t.Errorf("told of upgrades %v", upgraded)
	}
	l, err := ledger.Open(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if bal, err := l.BalanceAt(ctx, "chem", time.Time{}); err != nil || !bal.Amount.Equal(ledgertest.Dec(t, "10")) {
		t.Errorf("chem after the upgrade: %+v %v", bal, err)
	}
	if rep, err := l.Audit(ctx, ledger.AuditOptions{Full: true}); err != nil || len(rep.Problems) > 0 {
		t.Errorf("audit after the upgrade: %v %v", rep.Problems, err)
	}

	if _, err := open(ctx, url, Options{}, v1); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("the earlier ingot opens the upgraded bank: %v", err)
	}
	if _, err := ol.Deposit(ctx, ledger.Request{Actor: "test", ID: "3"}, deposit); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("the earlier ingot, still serving, changes the upgraded bank: %v", err)
	}
}

// TestBankTables: a backup copies every table the migrations make.
func TestBankTables(t *testing.T) {
	s, err := Open(context.Background(), pgtest.DB(t), Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.read(context.Background(), func(q pgx.Tx) error {
		st, err := inspect(context.Background(), q)
		if err == nil && !slices.Equal(st.tables, slices.Sorted(slices.Values(bankTables))) {
			t.Errorf("the schema's tables %v, the backup's %v", st.tables, bankTables)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeAllocationEnds: the upgrade to schema 4 reads each
// allocation's end from its document into ends_ns (no end, the zero time
// of older documents, an end to the nanosecond, one past 2262), after
// which LiveAllocations lists exactly those not ended at each time asked,
// and Check finds the column in step with the documents, or says which
// allocation is not.
func TestUpgradeAllocationEnds(t *testing.T) {
	ctx := context.Background()
	url, conn := bankOfSchema(t, 3)
	ends := map[int]string{
		1: ``, // no end
		2: `"end": "0001-01-01T00:00:00Z",`,
		3: `"end": "2026-01-05T10:00:00Z",`,
		4: `"end": "2026-01-05T10:00:00.000000500Z",`,
		5: `"end": "2030-01-01T00:00:00.123456Z",`,
		6: `"end": "2300-01-01T00:00:00Z",`,
	}
	for id := 1; id <= len(ends); id++ {
		doc := fmt.Sprintf(`{"id": %d, "account": "chem", "credit_limit": "0", "start": "2026-01-01T00:00:00Z", %s "created": "2026-01-01T00:00:00Z", "amount": "1", "deposited": "1"}`, id, ends[id])
		if _, err := conn.Exec(ctx, `INSERT INTO allocations (id, account, doc) VALUES ($1, 'chem', $2)`, id, doc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `UPDATE counters SET value = $1 WHERE name = 'allocations'`, len(ends)); err != nil {
		t.Fatal(err)
	}

	s, err := open(ctx, url, Options{}, bankMigrations)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := func(v string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tc := range []struct {
		at   time.Time
		want []uint64
	}{
		{time.Time{}, []uint64{1, 2, 3, 4, 5, 6}},
		{at("2026-01-05T09:59:59.999999999Z"), []uint64{1, 2, 3, 4, 5, 6}},
		{at("2026-01-05T10:00:00Z"), []uint64{1, 2, 4, 5, 6}},
		{at("2026-01-05T10:00:00.0000005Z"), []uint64{1, 2, 5, 6}},
		{at("2031-01-01T00:00:00Z"), []uint64{1, 2, 6}},
		{at("2299-12-31T23:59:59Z"), []uint64{1, 2, 6}},
		{at("2300-01-01T00:00:00Z"), []uint64{1, 2}},
	} {
		err := s.View(ctx, func(tx ledger.Tx) error {
			live, err := tx.LiveAllocations("chem", tc.at)
			var got []uint64
			for _, a := range live {
				got = append(got, a.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("not ended by %s: %v, want %v", tc.at.Format(time.RFC3339Nano), got, tc.want)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if problems, err := s.Check(ctx); err != nil || len(problems) > 0 {
		t.Errorf("check after the upgrade: %v %v", problems, err)
	}
	if _, err := conn.Exec(ctx, `UPDATE allocations SET ends_ns = 0 WHERE id = 5`); err != nil {
		t.Fatal(err)
	}
	problems, err := s.Check(ctx)
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0], "allocation 5 is listed as ending at 0 (Unix ns), its record says 2030-01-01T00:00:00.123456Z") {
		t.Errorf("check of a wrong end: %v %v", problems, err)
	}
}

// TestUpgradeAllocationStarts: the upgrade to schema 7 lists by start the
// allocations that start after they were made, after which a read finds
// the active ones and the next start, and Check finds the column in step
// with the documents.
func TestUpgradeAllocationStarts(t *testing.T) {
	ctx := context.Background()
	url, conn := bankOfSchema(t, 6)
	starts := map[int]string{
		1: "2026-01-01T00:00:00Z",        // when it was made
		2: "2026-03-01T00:00:00.123456Z", // later
		3: "2026-02-01T00:00:00Z",        // later, first
	}
	for id := 1; id <= len(starts); id++ {
		doc := fmt.Sprintf(`{"id": %d, "account": "chem", "credit_limit": "0", "start": %q, "created": "2026-01-01T00:00:00Z", "amount": "1", "deposited": "1"}`, id, starts[id])
		if _, err := conn.Exec(ctx, `INSERT INTO allocations (id, account, ends_ns, doc) VALUES ($1, 'chem', 9223372036854775807, $2)`, id, doc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `UPDATE counters SET value = $1 WHERE name = 'allocations'`, len(starts)); err != nil {
		t.Fatal(err)
	}
	s, err := open(ctx, url, Options{}, bankMigrations)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var listed []int64
	if err := conn.QueryRow(ctx, `SELECT array_agg(id ORDER BY id) FROM allocations WHERE starts_ns IS NOT NULL`).Scan(&listed); err != nil || !slices.Equal(listed, []int64{2, 3}) {
		t.Errorf("listed by start: %v %v, want [2 3]", listed, err)
	}
	for _, tc := range []struct {
		at, next string
		want     []uint64
	}{
		{"2026-01-15T00:00:00Z", "2026-02-01T00:00:00Z", []uint64{1}},
		{"2026-02-01T00:00:00Z", "2026-03-01T00:00:00.123456Z", []uint64{1, 3}},
		{"2026-03-01T00:00:00.123456Z", "", []uint64{1, 2, 3}},
	} {
		at, _ := time.Parse(time.RFC3339Nano, tc.at)
		err := s.View(ctx, func(tx ledger.Tx) error {
			active, err := tx.ActiveAllocations("chem", at)
			if err != nil {
				return err
			}
			var got []uint64
			for _, a := range active {
				got = append(got, a.ID)
			}
			next, ok, err := tx.NextStart("chem", at)
			if !slices.Equal(got, tc.want) || ok != (tc.next != "") || ok && next.Format(time.RFC3339Nano) != tc.next {
				t.Errorf("at %s: active %v, next start %s (%v); want %v, %q", tc.at, got, next.Format(time.RFC3339Nano), ok, tc.want, tc.next)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if problems, err := s.Check(ctx); err != nil || len(problems) > 0 {
		t.Errorf("check after the upgrade: %v %v", problems, err)
	}
}

// TestUpgradeAllocationsUsedUp: the upgrade to schema 8 marks the
// allocations used up (no amount, no credit limit), after which a read
// lists them apart from the active ones, and Check finds the column in
// step with the documents, and a column set wrong.
func TestUpgradeAllocationsUsedUp(t *testing.T) {
	ctx := context.Background()
	url, conn := bankOfSchema(t, 7)
	for id, amounts := range map[int][2]string{1: {"0", "0"}, 2: {"0.50", "0"}, 3: {"0.00", "10"}, 4: {"0.00", "0.00"}} {
		doc := fmt.Sprintf(`{"id": %d, "account": "chem", "credit_limit": %q, "start": "2026-01-01T00:00:00Z", "created": "2026-01-01T00:00:00Z", "amount": %q, "deposited": "1"}`, id, amounts[1], amounts[0])
		if _, err := conn.Exec(ctx, `INSERT INTO allocations (id, account, ends_ns, doc) VALUES ($1, 'chem', 9223372036854775807, $2)`, id, doc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `UPDATE counters SET value = 4 WHERE name = 'allocations'`); err != nil {
		t.Fatal(err)
	}
	s, err := open(ctx, url, Options{}, bankMigrations)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	err = s.View(ctx, func(tx ledger.Tx) error {
		for _, c := range []struct {
			what string
			list func(string, time.Time) ([]ledger.Allocation, error)
			want []uint64
		}{{"active", tx.ActiveAllocations, []uint64{2, 3}}, {"used up", func(account string, at time.Time) ([]ledger.Allocation, error) {
			return tx.UsedUpAllocations(account, at, -1)
		}, []uint64{1, 4}}, {"live", tx.LiveAllocations, []uint64{1, 2, 3, 4}}} {
			as, err := c.list("chem", at)
			if err != nil {
				return err
			}
			var got []uint64
			for _, a := range as {
				got = append(got, a.ID)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: %v, want %v", c.what, got, c.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if problems, err := s.Check(ctx); err != nil || len(problems) > 0 {
		t.Errorf("check after the upgrade: %v %v", problems, err)
	}
	if _, err := conn.Exec(ctx, `UPDATE allocations SET used_up = false WHERE id = 4`); err != nil {
		t.Fatal(err)
	}
	problems, err := s.Check(ctx)
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0], "allocation 4 is listed as not used up, its record says amount 0.00 and credit limit 0.00") {
		t.Errorf("check of a wrong mark: %v %v", problems, err)
	}
}

// bankOfSchema is a new bank made by the first n migrations, and a
// connection to it to write what an ingot of that schema would have.
func bankOfSchema(t *testing.T, n int) (string, *pgx.Conn) {
	ctx := context.Background()
	url := pgtest.DB(t)
	old, err := open(ctx, url, Options{Create: true}, bankMigrations[:n])
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return url, conn
}
