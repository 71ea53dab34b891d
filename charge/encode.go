package charge

import (
	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/jsonbuf"
)

// Hand-written JSON encoders of what the bank encodes for every lien and
// charge: the priced amount with its explanation (in the answers), the
// usage and request (in the lien's and charge's records and the requests'
// hashes). They give exactly encoding/json's bytes
// (TestEncodersMatchEncodingJSON checks them on random values with every
// field set), so a field added to Amount, Explanation, LineItem, Usage,
// Request or Resources must be added here too.
//
// They are AppendJSON methods, which ledger.Mutate looks for, and not
// MarshalJSON methods: encoding/json re-validates and compacts what a
// MarshalJSON method gives, which made json.Marshal of a charge's answer
// slower than by reflection (BenchmarkEncodeChargeResult in lien). A type
// that embeds another inherits its AppendJSON method, so Resources, which
// Usage and Request embed, has none.

// AppendJSON appends the amount's JSON, as encoding/json gives it, to dst.
func (a Amount) AppendJSON(dst []byte) ([]byte, error) {
	return jsonbuf.Object(dst, func(b *jsonbuf.Buf) {
		b.Key("credits")
		b.Decimal(a.Credits)
		b.Key("explanation")
		b.Append(a.Explanation.AppendJSON)
	})
}

// AppendJSON appends the explanation's JSON, as encoding/json gives it, to dst.
func (e Explanation) AppendJSON(dst []byte) ([]byte, error) {
	return jsonbuf.Object(dst, func(b *jsonbuf.Buf) {
		b.Key("subject")
		b.Str(e.Subject)
		b.Key("policy")
		writeEnum(b, policyNames, e.Policy, ErrUnknownPolicy)
		if e.State != 0 {
			b.Key("state")
			writeEnum(b, exitStateNames, e.State, ErrUnknownExitState)
		}
		b.OptStr("no_charge", e.NoCharge)
		if len(e.Basis) > 0 {
			b.Key("basis")
			b.Strings(e.Basis)
		}
		if len(e.Items) > 0 {
			b.Key("items")
			jsonbuf.Array(b, e.Items, writeLineItem)
		}
		for _, f := range [...]struct {
			name  string
			value decimal.Decimal
		}{
			{"time_scaled", e.TimeScaled}, {"usage", e.Usage}, {"multiplier", e.Multiplier}, {"fees", e.Fees}, {"exact", e.Exact},
		} {
			b.Key(f.name)
			b.Decimal(f.value)
		}
		b.Key("precision")
		b.Int(int64(e.Precision))
	})
}

func writeLineItem(b *jsonbuf.Buf, l LineItem) {
	b.Open()
	b.Key("type")
	b.Str(string(l.Type))
	b.Key("what")
	b.Str(l.What)
	b.OptStr("window", l.Window)
	b.Key("quantity")
	b.Decimal(l.Quantity)
	b.Key("rate")
	b.Decimal(l.Rate)
	b.OptInt("seconds", l.Seconds)
	b.Key("multiplier")
	b.Decimal(l.Multiplier)
	b.Key("subtotal")
	b.Decimal(l.Subtotal)
	b.Close()
}

// writeResourcesFields writes the members of resources inside an object
// the caller opens: Usage and Request embed them.
func writeResourcesFields(b *jsonbuf.Buf, r Resources) {
	b.Key("processors")
	b.Int(r.Processors)
	b.OptInt("nodes", r.Nodes)
	b.OptInt("gpus", r.GPUs)
	b.OptInt("memory_mb", r.MemoryMB)
	b.OptInt("disk_mb", r.DiskMB)
	b.OptStr("qos", r.QOS)
	b.OptStr("partition", r.Partition)
	b.OptStr("node_type", r.NodeType)
	if len(r.Licenses) > 0 {
		b.Key("licenses")
		b.IntMap(r.Licenses)
	}
}

// AppendJSON appends the usage's JSON, as encoding/json gives it, to dst.
func (u Usage) AppendJSON(dst []byte) ([]byte, error) {
	return jsonbuf.Object(dst, func(b *jsonbuf.Buf) {
		writeResourcesFields(b, u.Resources)
		b.Key("wallclock_seconds")
		b.Int(u.WallclockSeconds)
		b.OptInt("wallclock_limit_seconds", u.WallclockLimitSeconds)
		b.OptInt("cpu_seconds", u.CPUSeconds)
		b.OptTime("start", u.Start)
		b.OptTime("end", u.End)
		b.Key("state")
		writeEnum(b, exitStateNames, u.State, ErrUnknownExitState)
	})
}

// AppendJSON appends the request's JSON, as encoding/json gives it, to dst.
func (r Request) AppendJSON(dst []byte) ([]byte, error) {
	return jsonbuf.Object(dst, func(b *jsonbuf.Buf) {
		writeResourcesFields(b, r.Resources)
		b.Key("wallclock_limit_seconds")
		b.Int(r.WallclockLimitSeconds)
		b.OptTime("start", r.Start)
	})
}

// writeEnum writes an enumeration's value as encoding/json writes it by
// its MarshalText method (marshalEnum).
func writeEnum[T enum](b *jsonbuf.Buf, names []string, v T, unknown error) {
	if err := checkEnum(names, v, unknown); err != nil {
		b.Fail(err)
		return
	}
	b.Str(enumName(names, v))
}

// AppendJSON appends the policy's JSON, as encoding/json writes it by its
// MarshalText method, to dst: for the encoders of the records that hold a
// policy (package lien).
func (p Policy) AppendJSON(dst []byte) ([]byte, error) {
	b := jsonbuf.New(dst)
	writeEnum(b, policyNames, p, ErrUnknownPolicy)
	return b.Bytes()
}
