package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingot-hpc/ingot/ledger"
)

// Check checks what PostgreSQL does not check for the engine: the schema
// is this ingot's, with every table, its constraints validated and
// enforced; the journal's head row agrees with the newest entry and the
// journal is numbered without a gap; no counter lags behind the ids it
// gave; the node index lists only entries the journal holds; the columns
// the indexes are on say what the documents say. The ledger's audit checks
// the rest (every entry's hash and what the journal says of the state).
func (s *Store) Check(ctx context.Context) ([]string, error) {
	var problems []string
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	err := s.read(ctx, func(q pgx.Tx) error {
		st, err := inspect(ctx, q)
		if err != nil {
			return err
		}
		if st.version != s.latest {
			report("the schema is %d, not %d", st.version, s.latest)
		}
		for _, table := range bankTables {
			if !slices.Contains(st.tables, table) {
				report("table %s is missing", table)
			}
		}
		if len(problems) > 0 {
			return nil // the checks below read those tables
		}
		for _, c := range []struct{ what, sql string }{
			{"constraint %s is not validated", `SELECT c.conrelid::regclass || '.' || c.conname FROM pg_constraint c
				WHERE c.connamespace = current_schema()::regnamespace AND NOT c.convalidated`},
			{"trigger %s is disabled: the constraint it enforces is not", `SELECT t.tgrelid::regclass || '.' || t.tgname FROM pg_trigger t
				JOIN pg_class r ON r.oid = t.tgrelid WHERE r.relnamespace = current_schema()::regnamespace AND t.tgenabled = 'D'`},
			{"journal index: %s", `SELECT 'node ' || node || ' lists entry ' || seq || ', which the journal does not hold'
				FROM journal_nodes n WHERE NOT EXISTS (SELECT 1 FROM journal j WHERE j.seq = n.seq) LIMIT 10`},
			{"counter %s", `SELECT c.name || ' is at ' || c.value || ', below the id ' || m.id || ' it gave' FROM counters c
				JOIN (SELECT 'allocations', max(id) FROM allocations UNION ALL SELECT 'liens', max(id) FROM liens
				UNION ALL SELECT 'charges', max(id) FROM charges) m (name, id) ON m.name = c.name WHERE m.id > c.value`},
			{"%s", `SELECT 'node ' || name || ' is stored as ' || coalesce(doc->>'name', 'nothing') FROM nodes WHERE doc->>'name' IS DISTINCT FROM name
				UNION ALL SELECT 'user ' || name || ' is stored as ' || coalesce(doc->>'name', 'nothing') FROM users WHERE doc->>'name' IS DISTINCT FROM name
				UNION ALL SELECT 'machine ' || name || ' is stored as ' || coalesce(doc->>'name', 'nothing') FROM machines WHERE doc->>'name' IS DISTINCT FROM name
				UNION ALL SELECT 'allocation ' || id || ' is listed under account ' || account || ', its record says ' || coalesce(doc->>'account', 'none')
					FROM allocations WHERE doc->>'account' IS DISTINCT FROM account OR (doc->>'id')::numeric IS DISTINCT FROM id
				UNION ALL SELECT 'allocation ' || id || ' is listed as ending at ' || ends_ns || ' (Unix ns), its record says ' || coalesce(doc->>'end', 'never')
					FROM allocations WHERE abs(ends_ns::numeric - CASE
						WHEN doc->>'end' IS NULL OR (doc->>'end')::timestamptz < '1970-01-01T00:00:00Z' THEN 9223372036854775807
						WHEN (doc->>'end')::timestamptz >= '2262-04-11T00:00:00Z' THEN 9223372036854775806
						ELSE (extract(epoch FROM (doc->>'end')::timestamptz) * 1000000)::bigint * 1000 END) >= 1000
				UNION ALL SELECT 'allocation ' || id || ' is listed as starting at ' || starts_ns || ' (Unix ns), its record says ' || coalesce(doc->>'start', 'never')
					FROM allocations WHERE starts_ns IS NOT NULL AND abs(starts_ns::numeric - CASE
						WHEN (doc->>'start')::timestamptz >= '2262-04-11T00:00:00Z' THEN 9223372036854775806
						ELSE (extract(epoch FROM (doc->>'start')::timestamptz) * 1000000)::bigint * 1000 END) >= 1000
				UNION ALL SELECT 'allocation ' || id || CASE WHEN used_up THEN ' is listed as used up' ELSE ' is listed as not used up' END ||
					', its record says amount ' || coalesce(doc->>'amount', 'none') || ' and credit limit ' || coalesce(doc->>'credit_limit', 'none')
					FROM allocations WHERE used_up IS DISTINCT FROM ((doc->>'amount')::numeric = 0 AND (doc->>'credit_limit')::numeric = 0)
				UNION ALL SELECT 'charge ' || id || ' is listed under job ' || job || ' on ' || machine || ', its record says ' || coalesce(doc->>'job_id', 'none') || ' on ' || coalesce(doc->>'machine', 'none')
					FROM charges WHERE doc IS NOT NULL AND (doc->>'job_id' IS DISTINCT FROM job OR doc->>'machine' IS DISTINCT FROM machine OR (doc->>'id')::numeric IS DISTINCT FROM id)
				LIMIT 10`},
		} {
			rows, err := q.Query(ctx, c.sql)
			if err != nil {
				return err
			}
			found, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			for _, f := range found {
				report(c.what, f)
			}
		}
		if err := checkHead(ctx, q, report); err != nil {
			return err
		}
		if err := checkCharges(ctx, q, report); err != nil {
			return err
		}
		return checkLiens(ctx, q, report)
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: check %s: %w", s.where, err)
	}
	return problems, nil
}

// read runs fn in a read-only, repeatable-read transaction of its own.
func (s *Store) read(ctx context.Context, fn func(pgx.Tx) error) error {
	var ptx pgx.Tx
	err := s.retry(ctx, func() (err error) {
		ptx, err = s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		return err
	})
	if err != nil {
		return err
	}
	defer ptx.Rollback(context.Background())
	return fn(ptx)
}

// checkHead compares the head row with the newest entry, and the number
// of entries with the numbers of the oldest and the newest (the oldest
// follows the archive's boundary in a bank archived).
func checkHead(ctx context.Context, q pgx.Tx, report func(string, ...any)) error {
	var seq, count, first int64
	var tm *time.Time
	var hash []byte
	var last *int64
	var lastTime *time.Time
	var lastHash []byte
	err := q.QueryRow(ctx, `SELECT h.seq, h.time, h.hash, j.seq, j.time, j.hash, (SELECT count(*) FROM journal),
		coalesce((SELECT min(seq) FROM journal), 0)
		FROM journal_head h LEFT JOIN LATERAL (SELECT seq, time, hash FROM journal ORDER BY seq DESC LIMIT 1) j ON true`).
		Scan(&seq, &tm, &hash, &last, &lastTime, &lastHash, &count, &first)
	if err != nil {
		return err
	}
	head, err := makeHead(seq, tm, hash)
	if err != nil {
		report("journal head: %v", err)
		return nil
	}
	switch {
	case last == nil && head.Seq != 0:
		report("journal head: it names entry %d, and the journal is empty", head.Seq)
	case last == nil:
	case uint64(*last) != head.Seq:
		report("journal head: it names entry %d, and the newest entry is %d", head.Seq, *last)
	case len(lastHash) != sha256.Size || [sha256.Size]byte(lastHash) != head.Hash:
		report("journal head: its hash %x is not entry %d's %x", head.Hash[:8], *last, lastHash)
	case !lastTime.Equal(head.Time):
		report("journal head: its time %s is not entry %d's %s", head.Time.Format(time.RFC3339Nano), *last, lastTime.UTC().Format(time.RFC3339Nano))
	}
	if last != nil && count != *last-first+1 {
		report("journal: it holds %d entries numbered %d to %d", count, first, *last)
	}
	return nil
}

// checkedRecord is a lien's or a charge's record: its document (doc), or
// the one journal entry carrier (of bytes body) carries (of), saying what
// is wrong if neither reads.
func checkedRecord[T any](doc []byte, carrier *int64, body []byte, of func(ledger.Entry) *T) (T, error) {
	var v T
	switch {
	case doc != nil:
		if err := json.Unmarshal(doc, &v); err != nil {
			return v, fmt.Errorf("its record does not decode: %v", err)
		}
		return v, nil
	case carrier == nil:
		return v, errors.New("it has neither a record nor a journal entry")
	case body == nil:
		return v, fmt.Errorf("it is kept as journal entry %d's, which the journal does not hold", *carrier)
	}
	e, err := ledger.DecodeEntry(ledger.StoredEntry{Seq: uint64(*carrier), Body: body})
	if err != nil {
		return v, err
	}
	if p := of(e); p != nil {
		return *p, nil
	}
	return v, fmt.Errorf("it is kept as journal entry %d's, which carries none", *carrier)
}

// checkCharges compares the columns of each charge kept as a reference to
// a journal entry with the charge the entry carries (the SQL check above
// compares those of the others with their documents).
func checkCharges(ctx context.Context, q pgx.Tx, report func(string, ...any)) error {
	type row struct {
		id           int64
		machine, job string
		carrier      *int64
		body         []byte
	}
	for after := int64(math.MinInt64); ; {
		rows, err := q.Query(ctx, `SELECT c.id, c.machine, c.job, c.carrier, j.body FROM charges c LEFT JOIN journal j ON j.seq = c.carrier
			WHERE c.id > $1 AND c.doc IS NULL ORDER BY c.id LIMIT $2`, after, page)
		if err != nil {
			return err
		}
		found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var v row
			return v, r.Scan(&v.id, &v.machine, &v.job, &v.carrier, &v.body)
		})
		if err != nil {
			return err
		}
		for _, r := range found {
			c, err := checkedRecord(nil, r.carrier, r.body, func(e ledger.Entry) *ledger.Charge { return e.Charge })
			switch {
			case err != nil:
				report("charge %d: %v", r.id, err)
			case int64(c.ID) != r.id || c.Machine != r.machine || c.JobID != r.job:
				report("charge %d is listed under job %s on %s; the journal entry that carries it says charge %d of job %s on %s",
					r.id, r.job, r.machine, c.ID, c.JobID, c.Machine)
			}
		}
		if len(found) < page {
			return nil
		}
		after = found[len(found)-1].id
	}
}

// checkLiens compares the columns of each lien with its document, a page
// at a time (expiries compare exactly in Go, not in SQL's microseconds).
func checkLiens(ctx context.Context, q pgx.Tx, report func(string, ...any)) error {
	type row struct {
		id                    int64
		account, machine, job string
		active                bool
		expires               int64
		doc                   []byte
		carrier               *int64
		body                  []byte
	}
	for after := int64(math.MinInt64); ; {
		rows, err := q.Query(ctx, `SELECT l.id, l.account, l.machine, l.job, l.active, l.expires_ns, l.doc, l.carrier, j.body
			FROM liens l LEFT JOIN journal j ON j.seq = l.carrier WHERE l.id > $1 ORDER BY l.id LIMIT $2`, after, page)
		if err != nil {
			return err
		}
		found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var v row
			return v, r.Scan(&v.id, &v.account, &v.machine, &v.job, &v.active, &v.expires, &v.doc, &v.carrier, &v.body)
		})
		if err != nil {
			return err
		}
		for _, r := range found {
			l, err := checkedRecord(r.doc, r.carrier, r.body, func(e ledger.Entry) *ledger.Lien { return e.Lien })
			if err != nil {
				report("lien %d: %v", r.id, err)
				continue
			}
			if int64(l.ID) != r.id || l.Account != r.account || l.Machine != r.machine || l.JobID != r.job ||
				(l.State == ledger.LienActive) != r.active || l.Expires.UnixNano() != r.expires {
				report("lien %d: it is listed as lien %d of account %s, job %s on %s, active %v, expiring at %s; its record says otherwise",
					r.id, r.id, r.account, r.job, r.machine, r.active, time.Unix(0, r.expires).UTC().Format(time.RFC3339Nano))
			}
		}
		if len(found) < page {
			return nil
		}
		after = found[len(found)-1].id
	}
}
