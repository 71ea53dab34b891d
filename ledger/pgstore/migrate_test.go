package pgstore

import (
	"context"
	"errors"
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
