package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingot-hpc/ingot/ledger"
)

// The migrations: NNNN_what.sql makes schema NNNN from schema NNNN-1 (from
// an empty database for 0001). A released migration is never changed: a
// new schema is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered SQL file.
type migration struct {
	version uint64
	name    string
	sql     string
}

var migrationName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

// loadMigrations reads the migrations of dir in fsys, numbered from 1
// without a gap.
func loadMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("pgstore: migrations: %w", err)
	}
	var out []migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("pgstore: migration %s is not named NNNN_what.sql", e.Name())
		}
		v, _ := strconv.ParseUint(m[1], 10, 64)
		sql, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("pgstore: migration %s: %w", e.Name(), err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(sql)})
	}
	slices.SortFunc(out, func(a, b migration) int { return int(a.version) - int(b.version) })
	for i, m := range out {
		if m.version != uint64(i+1) {
			return nil, fmt.Errorf("pgstore: migration %s: want number %04d", m.name, i+1)
		}
	}
	return out, nil
}

// bankMigrations are this ingot's; the last one's number is its schema.
var bankMigrations = func() []migration {
	ms, err := loadMigrations(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the files are built in: a test catches this
	}
	return ms
}()

// SchemaVersion is the schema of the banks this ingot makes, for `ingot
// version`.
var SchemaVersion = uint64(len(bankMigrations))

// migrationLock is the advisory lock key under which a schema is made or
// upgraded, so that servers started together do it once.
const migrationLock = 0x696e676f74 // "ingot"

// state is what Open finds in a database.
type state struct {
	version uint64   // 0: no schema_version table
	tables  []string // the tables of the current schema
}

// inspect reads what the current schema holds, writing nothing.
func inspect(ctx context.Context, q querier) (state, error) {
	var st state
	rows, err := q.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`)
	if err != nil {
		return st, err
	}
	if st.tables, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return st, err
	}
	if !slices.Contains(st.tables, "schema_version") {
		return st, nil
	}
	var v *int64
	if err := q.QueryRow(ctx, `SELECT max(version) FROM schema_version`).Scan(&v); err != nil {
		return st, err
	}
	if v == nil || *v < 1 {
		return st, fmt.Errorf("%w: the table schema_version is empty", ledger.ErrCorrupt)
	}
	st.version = uint64(*v)
	return st, nil
}

// checkState refuses what Open must not use as asked: another program's
// tables, a newer schema, no bank unless it may make one, an older schema
// in a store opened read-only.
func checkState(st state, latest uint64, where string, create, noUpgrade bool) error {
	switch {
	case st.version == 0 && len(st.tables) > 0:
		return fmt.Errorf("%w: %s holds tables (%s) but no schema_version: it belongs to another program; give ingot a database (or a schema, with search_path) of its own", ErrNotBank, where, excerpt(st.tables))
	case st.version == 0 && !create:
		return fmt.Errorf("%w: %s is empty (create a bank with `ingot init --store URL`)", ledger.ErrNotInitialized, where)
	case st.version > latest:
		return fmt.Errorf("%w: %s has schema %d, and this ingot reads schemas up to %d: upgrade ingot", ErrNewerSchema, where, st.version, latest)
	case st.version < latest && st.version > 0 && noUpgrade:
		return fmt.Errorf("%w: %s has schema %d and this ingot reads schema %d. A command that only reads never rewrites a bank: "+
			"upgrade it with ingot --store URL upgrade (serve and any change upgrade it too, in one transaction)", ledger.ErrUpgradeNeeded, where, st.version, latest)
	}
	return nil
}

// excerpt names the first few tables.
func excerpt(tables []string) string {
	if len(tables) > 5 {
		return strings.Join(tables[:5], ", ") + fmt.Sprintf(" and %d more", len(tables)-5)
	}
	return strings.Join(tables, ", ")
}

// migrate brings the database to the last of ms in one transaction, under
// the advisory lock (another process may have done it meanwhile), and
// returns the schema it found.
func migrate(ctx context.Context, conn *pgx.Conn, ms []migration, where string) (from uint64, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
		return 0, err
	}
	st, err := inspect(ctx, tx)
	if err != nil {
		return 0, err
	}
	latest := uint64(len(ms))
	if err := checkState(st, latest, where, true, false); err != nil {
		return 0, err
	}
	if st.version > 0 {
		// Wait for the groups of any ingot still serving the old schema.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM journal_head FOR UPDATE`); err != nil {
			return 0, err
		}
	}
	for _, m := range ms[st.version:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return 0, fmt.Errorf("pgstore: migration %s: %w", m.name, err)
		}
		if step := migrationSteps[m.version]; step != nil {
			if err := step(ctx, tx); err != nil {
				return 0, fmt.Errorf("pgstore: migration %s: %w", m.name, err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, m.version); err != nil {
			return 0, fmt.Errorf("pgstore: migration %s: %w", m.name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	return st.version, nil
}

// migrationSteps are what a migration needs done in Go after its SQL,
// in the same transaction: what SQL cannot compute from the rows there.
var migrationSteps = map[uint64]func(context.Context, pgx.Tx) error{
	5: indexSearchTerms,
}

// indexSearchTerms lists every entry of the journal under its
// ledger.SearchTerms (schema 5), a page of entries at a time.
func indexSearchTerms(ctx context.Context, tx pgx.Tx) error {
	for after := int64(0); ; {
		rows, err := tx.Query(ctx, `SELECT seq, time, hash, body FROM journal WHERE seq > $1 ORDER BY seq LIMIT $2`, after, page)
		if err != nil {
			return err
		}
		entries, err := pgx.CollectRows(rows, scanEntry)
		if err != nil {
			return err
		}
		var terms []string
		var seqs []int64
		for _, se := range entries {
			e, err := ledger.DecodeEntry(se)
			if err != nil {
				return err
			}
			for _, term := range ledger.SearchTerms(e) {
				terms, seqs = append(terms, term), append(seqs, int64(e.Seq))
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO journal_nodes (node, seq) SELECT * FROM unnest($1::text[], $2::bigint[])`, terms, seqs); err != nil {
			return err
		}
		if len(entries) < page {
			return nil
		}
		after = int64(entries[len(entries)-1].Seq)
	}
}

// errAs is errors.As for a target type.
func errAs[T error](err error) (T, bool) {
	var target T
	ok := errors.As(err, &target)
	return target, ok
}
