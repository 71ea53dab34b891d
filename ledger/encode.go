package ledger

import (
	"github.com/ingot-hpc/ingot/internal/jsonbuf"
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

func writeHold(b *jsonbuf.Buf, h Hold) {
	b.Open()
	b.Key("allocation")
	b.Uint(h.Allocation)
	b.Key("amount")
	b.Decimal(h.Amount)
	b.Close()
}

// writeJob writes the members of a lien or a charge that say whose job it
// is, which come first in both.
func writeJob(b *jsonbuf.Buf, id uint64, j JobRef) {
	b.Key("id")
	b.Uint(id)
	for _, f := range [...]struct{ name, value string }{
		{"job_id", j.JobID}, {"machine", j.Machine}, {"project", j.Project}, {"account", j.Account}, {"user", j.User},
	} {
		b.Key(f.name)
		b.Str(f.value)
	}
}

// MarshalJSON is the lien's JSON, as encoding/json would give it. (Embed
// no Lien in another struct: this method would be promoted to it.)
func (l Lien) MarshalJSON() ([]byte, error) { return l.AppendJSON(nil) }

// AppendJSON appends the lien's JSON (see MarshalJSON) to dst.
func (l Lien) AppendJSON(dst []byte) ([]byte, error) {
	return jsonbuf.Object(dst, func(b *jsonbuf.Buf) {
		writeJob(b, l.ID, l.JobRef)
		b.Key("amount")
		b.Decimal(l.Amount)
		b.Key("holds")
		jsonbuf.Array(b, l.Holds, writeHold)
		b.Key("charged")
		b.Decimal(l.Charged)
		b.Key("created")
		b.Time(l.Created)
		b.Key("expires")
		b.Time(l.Expires)
		b.Key("state")
		b.Str(string(l.State))
		if len(l.Detail) > 0 {
			b.Key("detail")
			b.Raw(l.Detail)
		}
	})
}

// MarshalJSON is the charge's JSON, as encoding/json would give it. (Embed
// no Charge in another struct: this method would be promoted to it.)
func (c Charge) MarshalJSON() ([]byte, error) { return c.AppendJSON(nil) }

// AppendJSON appends the charge's JSON (see MarshalJSON) to dst.
func (c Charge) AppendJSON(dst []byte) ([]byte, error) {
	return jsonbuf.Object(dst, func(b *jsonbuf.Buf) {
		writeJob(b, c.ID, c.JobRef)
		b.OptUint("lien", c.Lien)
		b.Key("amount")
		b.Decimal(c.Amount)
		b.Key("debits")
		jsonbuf.Array(b, c.Debits, writeHold)
		b.Key("overdrawn")
		b.Decimal(c.Overdrawn)
		b.Key("refunded")
		b.Decimal(c.Refunded)
		if len(c.Refunds) > 0 {
			b.Key("refunds")
			jsonbuf.Array(b, c.Refunds, writeHold)
		}
		b.Key("final")
		b.Bool(c.Final)
		b.Key("time")
		b.Time(c.Time)
		if len(c.Detail) > 0 {
			b.Key("detail")
			b.Raw(c.Detail)
		}
	})
}

// writeTermsFields writes the members of allocation terms, inside an
// object that the caller opens: Allocation embeds them. (Neither has a
// MarshalJSON method: Allocation would inherit the terms' and lose its
// amounts, and AllocationStatus the allocation's.)
func writeTermsFields(b *jsonbuf.Buf, a AllocationTerms) {
	b.Key("id")
	b.Uint(a.ID)
	b.Key("account")
	b.Str(a.Account)
	b.Key("credit_limit")
	b.Decimal(a.CreditLimit)
	b.Key("start")
	b.Time(a.Start)
	b.OptTime("end", a.End)
	b.OptStr("machine", a.Machine)
	b.OptStr("description", a.Description)
	b.Key("created")
	b.Time(a.Created)
}

func writeTerms(b *jsonbuf.Buf, t AllocationTerms) {
	b.Open()
	writeTermsFields(b, t)
	b.Close()
}

// EncodeAllocation is the allocation's JSON, as encoding/json gives it.
// It is a function, not a MarshalJSON method, because Allocation is
// embedded (AllocationStatus): a method would be promoted and encode the
// embedding type as a bare allocation.
func EncodeAllocation(a Allocation) ([]byte, error) {
	return jsonbuf.Object(nil, func(b *jsonbuf.Buf) {
		writeTermsFields(b, a.AllocationTerms)
		b.Key("amount")
		b.Decimal(a.Amount)
		b.Key("deposited")
		b.Decimal(a.Deposited)
	})
}

func writeDelta(b *jsonbuf.Buf, d Delta) {
	b.Open()
	b.Key("allocation")
	b.Uint(d.Allocation)
	b.Key("account")
	b.Str(d.Account)
	b.Key("amount")
	b.Decimal(d.Amount)
	b.Key("deposited")
	b.Decimal(d.Deposited)
	b.Close()
}

// writeJSON writes the entry, Hash included, as encoding/json would.
// writeJSON writes e and notes in carried where the lien and charge it
// carries start and end.
func (e Entry) writeJSON(b *jsonbuf.Buf, carried *carriedSpans) {
	b.Open()
	b.Key("seq")
	b.Uint(e.Seq)
	b.Key("time")
	b.Time(e.Time)
	b.Key("actor")
	b.Str(e.Actor)
	b.OptStr("request_id", e.RequestID)
	b.Key("kind")
	b.Str(string(e.Kind))
	b.OptStr("node", e.Node)
	b.OptStr("ref", e.Ref)
	b.OptStr("description", e.Description)
	for _, f := range []struct {
		name  string
		value any
		set   bool
	}{
		{"settings", e.Settings, e.Settings != nil}, {"node_state", e.NodeState, e.NodeState != nil},
		{"user_state", e.UserState, e.UserState != nil}, {"machine_state", e.Machine, e.Machine != nil},
	} {
		if f.set {
			b.Key(f.name)
			b.Value(f.value)
		}
	}
	if e.Lien != nil {
		b.Key("lien")
		carried.lien[0] = b.Len()
		b.Append(e.Lien.AppendJSON)
		carried.lien[1] = b.Len()
	}
	if e.Charge != nil {
		b.Key("charge")
		carried.charge[0] = b.Len()
		b.Append(e.Charge.AppendJSON)
		carried.charge[1] = b.Len()
	}
	if e.Record != nil {
		b.Key("record")
		b.Value(e.Record)
	}
	if len(e.Terms) > 0 {
		b.Key("terms")
		jsonbuf.Array(b, e.Terms, writeTerms)
	}
	if len(e.Deltas) > 0 {
		b.Key("deltas")
		jsonbuf.Array(b, e.Deltas, writeDelta)
	}
	b.Key("prev_hash")
	b.Str(e.PrevHash)
	b.Key("hash")
	b.Str(e.Hash)
	b.Close()
}
