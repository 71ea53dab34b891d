package pgstore

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// BackupPrefix is how a backup starts: a copy is known by it.
const BackupPrefix = "-- A backup of the ingot bank "

// bankTables are the schema's tables, in the order a backup loads them
// (the journal before the index that refers to it).
var bankTables = []string{"schema_version", "settings", "journal_head", "counters", "nodes", "users", "machines",
	"allocations", "balance_history", "journal", "journal_nodes", "requests", "liens", "charges", "records"}

// Backup writes the bank, as one snapshot taken while the others go on, as
// a SQL script that psql runs into an empty database: the schema's
// migrations, then every table's rows in COPY's text format, in one
// transaction.
func (s *Store) Backup(ctx context.Context, w io.Writer) (int64, error) {
	cw := &countingWriter{ctx: ctx, w: w}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("pgstore: backup of %s: %w", s.where, err)
	}
	defer conn.Release()
	ptx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, fmt.Errorf("pgstore: backup of %s: %w", s.where, err)
	}
	defer ptx.Rollback(context.Background())
	if err := s.backup(ctx, ptx, cw); err != nil {
		return cw.n, fmt.Errorf("pgstore: backup of %s: %w", s.where, err)
	}
	return cw.n, nil
}

// backup writes the script; w keeps its first failure, returned at the
// end.
func (s *Store) backup(ctx context.Context, ptx pgx.Tx, w *countingWriter) error {
	st, err := inspect(ctx, ptx)
	if err != nil {
		return err
	}
	if st.version != s.latest {
		return fmt.Errorf("%w: the bank has schema %d, this ingot writes %d", ErrNewerSchema, st.version, s.latest)
	}
	fmt.Fprintf(w, "%s%s (schema %d), taken at %s.\n", BackupPrefix, s.where, st.version, time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "-- Restore it into an empty database: psql -v ON_ERROR_STOP=1 -f FILE 'postgres://...'\n")
	fmt.Fprintf(w, "SET client_encoding = 'UTF8';\nSET standard_conforming_strings = on;\nBEGIN;\n")
	for _, m := range bankMigrations[:st.version] {
		fmt.Fprintf(w, "\n-- migration %s\n%s\n", m.name, m.sql)
	}
	// The migrations' first rows make way for the bank's.
	fmt.Fprintf(w, "TRUNCATE %s;\n", strings.Join(bankTables, ", "))
	for _, table := range bankTables {
		rows, err := ptx.Query(ctx, `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, table)
		if err != nil {
			return err
		}
		cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		list := strings.Join(cols, ", ")
		fmt.Fprintf(w, "\nCOPY %s (%s) FROM stdin;\n", table, list)
		if _, err := ptx.Conn().PgConn().CopyTo(ctx, w, fmt.Sprintf("COPY %s (%s) TO STDOUT", table, list)); err != nil {
			return fmt.Errorf("copy %s: %w", table, err)
		}
		io.WriteString(w, "\\.\n")
	}
	io.WriteString(w, "\nCOMMIT;\n")
	return w.err
}

// countingWriter counts what it writes, and stops at its first failure,
// or once its context is done: err says why.
type countingWriter struct {
	ctx context.Context
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.err == nil {
		c.err = c.ctx.Err()
	}
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
