package pgstore

import (
	"fmt"
	"strings"
)

// A change's writes wait in memory, a row per record (the last written:
// a record a group writes twice, a lien placed and charged, the
// account's running sums, is sent once), and go to PostgreSQL as one
// statement a table that takes every row as arrays (unnest). PostgreSQL
// spends most of a small write on the statement, not the row: a group of
// 64 changes sends a dozen statements, not a dozen a change.
//
// They are sent at the group's end, or before a read that could see them
// (tx.send): a read of one record or index entry sends them only if one of
// them is for it (pending.has), other reads whenever any wait.

// table is a table the writes go to: its columns ("name type"), and the key an upsert replaces the row on
// ("" for the journal's tables, only ever appended to; an entry there
// already is a conflict to report, not to overwrite).
type table struct {
	name     string
	cols     []string
	conflict string
	// update is what an upsert sets a column to, where not its new value.
	update map[string]string
	// upsert and delete are the statements, made once from the above:
	// delete takes the key's columns, the first of cols.
	upsert, delete string
}

// The tables, in the order a group's rows go: the journal before its node
// index, which refers to it.
const (
	journalTable = iota
	journalNodesTable
	settingsTable
	nodesTable
	usersTable
	machinesTable
	allocationsTable
	historyTable
	liensTable
	chargesTable
	recordsTable
	requestsTable
	tableCount
)

var tables = [tableCount]*table{
	journalTable:      {name: "journal", cols: []string{"seq bigint", "time timestamptz", "hash bytea", "body bytea"}},
	journalNodesTable: {name: "journal_nodes", cols: []string{"node text", "seq bigint"}},
	settingsTable:     {name: "settings", cols: []string{"doc json"}, conflict: "singleton"},
	nodesTable:        {name: "nodes", cols: []string{"name text", "doc json"}, conflict: "name"},
	usersTable:        {name: "users", cols: []string{"name text", "doc json"}, conflict: "name"},
	machinesTable:     {name: "machines", cols: []string{"name text", "doc json"}, conflict: "name"},
	allocationsTable: {name: "allocations", cols: []string{"id bigint", "account text", "ends_ns bigint", "starts_ns bigint", "used_up boolean", "doc json"}, conflict: "id",
		// Once NULL (the allocation found started), starts_ns stays so.
		update: map[string]string{"starts_ns": "CASE WHEN allocations.starts_ns IS NOT NULL THEN EXCLUDED.starts_ns END"}},
	historyTable: {name: "balance_history", cols: []string{"allocation bigint", "seq bigint", "doc json"}, conflict: "allocation, seq"},
	liensTable: {name: "liens", cols: []string{"id bigint", "account text", "machine text", "job text", "active boolean", "expires_ns bigint", "doc json",
		"carrier bigint"}, conflict: "id"},
	chargesTable:  {name: "charges", cols: []string{"id bigint", "machine text", "job text", "doc json", "carrier bigint"}, conflict: "id"},
	recordsTable:  {name: "records", cols: []string{"kind text", "key text", "value bytea"}, conflict: "kind, key"},
	requestsTable: {name: "requests", cols: []string{"client text", "id text", "content_hash bytea", "seq bigint", "time timestamptz", "answer bytea"}, conflict: "client, id"},
}

func init() {
	for _, tb := range tables {
		var names, arrays, set []string
		for i, col := range tb.cols {
			name, typ, _ := strings.Cut(col, " ")
			names = append(names, name)
			arrays = append(arrays, fmt.Sprintf("$%d::%s[]", i+1, typ))
			if !strings.Contains(", "+tb.conflict+",", ", "+name+",") {
				value := "EXCLUDED." + name
				if u, ok := tb.update[name]; ok {
					value = u
				}
				set = append(set, name+" = "+value)
			}
		}
		tb.upsert = fmt.Sprintf("INSERT INTO %s (%s) SELECT * FROM unnest(%s)", tb.name, strings.Join(names, ", "), strings.Join(arrays, ", "))
		if tb.conflict != "" {
			tb.upsert += fmt.Sprintf(" ON CONFLICT (%s) DO UPDATE SET %s", tb.conflict, strings.Join(set, ", "))
			keys := strings.Count(tb.conflict, ",") + 1
			tb.delete = fmt.Sprintf("DELETE FROM %s WHERE (%s) IN (SELECT * FROM unnest(%s))",
				tb.name, strings.Join(names[:keys], ", "), strings.Join(arrays[:keys], ", "))
		}
	}
}

// row is a record to write (args: its columns) or to delete (args: its
// key's), and the call of its group that wrote it last.
type row struct {
	key     string
	args    []any
	deleted bool
	call    int
}

// rowSet is a table's rows waiting, each key once, in the order first
// written.
type rowSet struct {
	at   map[string]int
	rows []row
}

// pending are writes waiting: a call's, or those of the calls of the
// group done. tags are the keys of the rows and of the indexes they
// change, which reads check (has).
type pending struct {
	tables [tableCount]rowSet
	tags   map[string]bool
}

// put adds a row under key, replacing the row key had, and tags it.
func (p *pending) put(tb int, key string, r row, tags ...string) {
	r.key = key
	s := &p.tables[tb]
	if s.at == nil {
		s.at = map[string]int{}
	}
	if i, ok := s.at[key]; ok {
		s.rows[i] = r
	} else {
		s.at[key] = len(s.rows)
		s.rows = append(s.rows, r)
	}
	if p.tags == nil {
		p.tags = map[string]bool{}
	}
	p.tags[key] = true
	for _, tag := range tags {
		p.tags[tag] = true
	}
}

// has says whether a row waiting is under key or tagged with it.
func (p *pending) has(key string) bool { return p.tags[key] }

// empty says whether no row waits.
func (p *pending) empty() bool { return len(p.tags) == 0 }

// merge adds a later call's rows to p.
func (p *pending) merge(later *pending) {
	for tb, s := range later.tables {
		for _, r := range s.rows {
			p.put(tb, r.key, r)
		}
	}
	for tag := range later.tags {
		if p.tags == nil {
			p.tags = map[string]bool{}
		}
		p.tags[tag] = true
	}
}

// statements are p's rows as statements: per table, one that deletes and
// one that writes, each naming the call of its rows (-1 if several).
func (p *pending) statements() []statement {
	var out []statement
	for tb, s := range p.tables {
		for _, deleted := range []bool{true, false} {
			var st statement
			var columns [][]any
			for _, r := range s.rows {
				if r.deleted != deleted {
					continue
				}
				if columns == nil {
					columns, st.call = make([][]any, len(r.args)), r.call
				} else if st.call != r.call {
					st.call = -1
				}
				for i, v := range r.args {
					columns[i] = append(columns[i], v)
				}
			}
			if columns == nil {
				continue
			}
			st.what, st.sql = fmt.Sprintf("write %d rows of %s", len(columns[0]), tables[tb].name), tables[tb].upsert
			if deleted {
				st.what, st.sql = fmt.Sprintf("delete %d rows of %s", len(columns[0]), tables[tb].name), tables[tb].delete
			}
			for _, c := range columns {
				st.args = append(st.args, c)
			}
			out = append(out, st)
		}
	}
	return out
}
