package ledger

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// Hand-written JSON encoders of the records every lien and charge writes:
// the journal entry, its lien or charge, the allocations it moves. They
// give exactly the bytes encoding/json gives for the same values
// (TestEncodersMatchEncodingJSON compares them on random values with every
// field set), so the journal's canonical form is unchanged. They exist
// because encoding/json's reflection, and its compaction of every
// json.RawMessage and Marshaler output, took about a third of the single
// writer's time.
//
// A field added to Entry, Lien, Charge, Delta, Hold, AllocationTerms or
// Allocation must be added here too; the test fills every field by
// reflection and fails when an encoder leaves one out.

// jsonBuf appends JSON to a byte slice.
type jsonBuf []byte

// open and close write an object's braces.
func (b *jsonBuf) open()  { *b = append(*b, '{') }
func (b *jsonBuf) close() { *b = append(*b, '}') }

// key writes a member's name (which must need no escaping), after a comma
// unless it is the object's first.
func (b *jsonBuf) key(name string) {
	if (*b)[len(*b)-1] != '{' {
		*b = append(*b, ',')
	}
	*b = append(*b, '"')
	*b = append(*b, name...)
	*b = append(*b, '"', ':')
}

// str writes s as encoding/json does: as it is if every byte is printable
// ASCII needing no escape (names and ids, nearly always), else through
// encoding/json itself, whose escapes (HTML characters, U+2028, invalid
// UTF-8) are not repeated here.
func (b *jsonBuf) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s) // a string always encodes
			*b = append(*b, quoted...)
			return
		}
	}
	*b = append(*b, '"')
	*b = append(*b, s...)
	*b = append(*b, '"')
}

func (b *jsonBuf) uint(n uint64) { *b = strconv.AppendUint(*b, n, 10) }

func (b *jsonBuf) bool(v bool) { *b = strconv.AppendBool(*b, v) }

// decimal writes d as decimal.Decimal's MarshalJSON does: its text, quoted.
func (b *jsonBuf) decimal(d decimal.Decimal) {
	*b = append(*b, '"')
	*b = append(*b, d.String()...)
	*b = append(*b, '"')
}

// time writes t as time.Time's MarshalJSON does, which refuses years
// outside 0 to 9999.
func (b *jsonBuf) time(t time.Time) error {
	if y := t.Year(); y < 0 || y > 9999 {
		_, err := t.MarshalJSON()
		return err
	}
	*b = append(*b, '"')
	*b = t.AppendFormat(*b, time.RFC3339Nano)
	*b = append(*b, '"')
	return nil
}

// value writes v with encoding/json: for the kinds of record that are rare
// in the journal (settings, nodes, users, machines, records).
func (b *jsonBuf) value(v any) error {
	raw, err := json.Marshal(v)
	*b = append(*b, raw...)
	return err
}

// raw writes a json.RawMessage as it is. encoding/json would compact it;
// the raw messages here (lien and charge details) are encoding/json's own
// output, compact already.
func (b *jsonBuf) raw(m json.RawMessage) { *b = append(*b, m...) }

func (b *jsonBuf) holds(hs []Hold) {
	if hs == nil {
		*b = append(*b, "null"...)
		return
	}
	*b = append(*b, '[')
	for i, h := range hs {
		if i > 0 {
			*b = append(*b, ',')
		}
		b.open()
		b.key("allocation")
		b.uint(h.Allocation)
		b.key("amount")
		b.decimal(h.Amount)
		b.close()
	}
	*b = append(*b, ']')
}

// jobFields opens the object of a lien or a charge and writes the members
// that say whose job it is, which come first in both.
func (b *jsonBuf) jobFields(id uint64, job, machine, project, account, user string) {
	b.open()
	b.key("id")
	b.uint(id)
	for _, f := range [...]struct{ name, value string }{
		{"job_id", job}, {"machine", machine}, {"project", project}, {"account", account}, {"user", user},
	} {
		b.key(f.name)
		b.str(f.value)
	}
}

// MarshalJSON is the lien's JSON, as encoding/json would give it. (Embed
// no Lien in another struct: this method would be promoted to it.)
func (l Lien) MarshalJSON() ([]byte, error) {
	var b jsonBuf
	err := l.appendJSON(&b)
	return b, err
}

func (l Lien) appendJSON(b *jsonBuf) error {
	b.jobFields(l.ID, l.JobID, l.Machine, l.Project, l.Account, l.User)
	b.key("amount")
	b.decimal(l.Amount)
	b.key("holds")
	b.holds(l.Holds)
	b.key("charged")
	b.decimal(l.Charged)
	b.key("created")
	if err := b.time(l.Created); err != nil {
		return err
	}
	b.key("expires")
	if err := b.time(l.Expires); err != nil {
		return err
	}
	b.key("state")
	b.str(string(l.State))
	if len(l.Detail) > 0 {
		b.key("detail")
		b.raw(l.Detail)
	}
	b.close()
	return nil
}

// MarshalJSON is the charge's JSON, as encoding/json would give it. (Embed
// no Charge in another struct: this method would be promoted to it.)
func (c Charge) MarshalJSON() ([]byte, error) {
	var b jsonBuf
	err := c.appendJSON(&b)
	return b, err
}

func (c Charge) appendJSON(b *jsonBuf) error {
	b.jobFields(c.ID, c.JobID, c.Machine, c.Project, c.Account, c.User)
	if c.Lien != 0 {
		b.key("lien")
		b.uint(c.Lien)
	}
	b.key("amount")
	b.decimal(c.Amount)
	b.key("debits")
	b.holds(c.Debits)
	b.key("overdrawn")
	b.decimal(c.Overdrawn)
	b.key("refunded")
	b.decimal(c.Refunded)
	if len(c.Refunds) > 0 {
		b.key("refunds")
		b.holds(c.Refunds)
	}
	b.key("final")
	b.bool(c.Final)
	b.key("time")
	if err := b.time(c.Time); err != nil {
		return err
	}
	if len(c.Detail) > 0 {
		b.key("detail")
		b.raw(c.Detail)
	}
	b.close()
	return nil
}

// termsFields writes the members of allocation terms, inside an object
// that the caller opens: Allocation embeds them. (Neither has a
// MarshalJSON method: Allocation would inherit the terms' and lose its
// amounts, and AllocationStatus the allocation's.)
func (a AllocationTerms) termsFields(b *jsonBuf) error {
	b.key("id")
	b.uint(a.ID)
	b.key("account")
	b.str(a.Account)
	b.key("credit_limit")
	b.decimal(a.CreditLimit)
	b.key("start")
	if err := b.time(a.Start); err != nil {
		return err
	}
	if !a.End.IsZero() {
		b.key("end")
		if err := b.time(a.End); err != nil {
			return err
		}
	}
	if a.Machine != "" {
		b.key("machine")
		b.str(a.Machine)
	}
	if a.Description != "" {
		b.key("description")
		b.str(a.Description)
	}
	b.key("created")
	return b.time(a.Created)
}

// EncodeAllocation is the allocation's JSON, as encoding/json gives it.
// It is a function, not a MarshalJSON method, because Allocation is
// embedded (AllocationStatus): a method would be promoted and encode the
// embedding type as a bare allocation.
func EncodeAllocation(a Allocation) ([]byte, error) {
	var b jsonBuf
	b.open()
	if err := a.termsFields(&b); err != nil {
		return nil, err
	}
	b.key("amount")
	b.decimal(a.Amount)
	b.key("deposited")
	b.decimal(a.Deposited)
	b.close()
	return b, nil
}

// appendJSON writes the entry, Hash included, as encoding/json would.
func (e Entry) appendJSON(b *jsonBuf) error {
	b.open()
	b.key("seq")
	b.uint(e.Seq)
	b.key("time")
	if err := b.time(e.Time); err != nil {
		return err
	}
	b.key("actor")
	b.str(e.Actor)
	for _, f := range []struct{ name, value string }{
		{"request_id", e.RequestID}, {"kind", string(e.Kind)}, {"node", e.Node}, {"ref", e.Ref}, {"description", e.Description},
	} {
		if f.value != "" || f.name == "kind" {
			b.key(f.name)
			b.str(f.value)
		}
	}
	for _, f := range []struct {
		name  string
		value any
		set   bool
	}{
		{"settings", e.Settings, e.Settings != nil}, {"node_state", e.NodeState, e.NodeState != nil},
		{"user_state", e.UserState, e.UserState != nil}, {"machine_state", e.Machine, e.Machine != nil},
	} {
		if f.set {
			b.key(f.name)
			if err := b.value(f.value); err != nil {
				return err
			}
		}
	}
	if e.Lien != nil {
		b.key("lien")
		if err := e.Lien.appendJSON(b); err != nil {
			return err
		}
	}
	if e.Charge != nil {
		b.key("charge")
		if err := e.Charge.appendJSON(b); err != nil {
			return err
		}
	}
	if e.Record != nil {
		b.key("record")
		if err := b.value(e.Record); err != nil {
			return err
		}
	}
	if len(e.Terms) > 0 {
		b.key("terms")
		*b = append(*b, '[')
		for i, t := range e.Terms {
			if i > 0 {
				*b = append(*b, ',')
			}
			b.open()
			if err := t.termsFields(b); err != nil {
				return err
			}
			b.close()
		}
		*b = append(*b, ']')
	}
	if len(e.Deltas) > 0 {
		b.key("deltas")
		*b = append(*b, '[')
		for i, d := range e.Deltas {
			if i > 0 {
				*b = append(*b, ',')
			}
			b.open()
			b.key("allocation")
			b.uint(d.Allocation)
			b.key("account")
			b.str(d.Account)
			b.key("amount")
			b.decimal(d.Amount)
			b.key("deposited")
			b.decimal(d.Deposited)
			b.close()
		}
		*b = append(*b, ']')
	}
	b.key("prev_hash")
	b.str(e.PrevHash)
	b.key("hash")
	b.str(e.Hash)
	b.close()
	return nil
}
