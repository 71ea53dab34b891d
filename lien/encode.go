package lien

import (
	"github.com/ingot-hpc/ingot/internal/jsonbuf"
)

// lienDetailSize and chargeDetailSize are the last lengths of a lien's and
// a charge's details, encoded at every lien and charge.
var lienDetailSize, chargeDetailSize jsonbuf.SizeHint

// Hand-written JSON encoders of what the single writer encodes for every
// lien and charge: the answers (kept for retries and sent as they are by
// the server), the lien's and charge's details, and the requests (hashed
// to detect a reused request id). They give exactly encoding/json's bytes
// (TestEncodersMatchEncodingJSON checks them on random values with every
// field set), so a field added to LienResult, ChargeResult, Detail,
// chargeDetail, PlaceSpec, ChargeSpec or Job must be added here too.
//
// ledger.Mutate uses AppendJSON where a result or a request has it; other
// encodings (a server's answer to a request without an id, the client's
// request) stay with encoding/json, which would re-validate and compact a
// MarshalJSON method's output and so gain nothing (see charge's
// encode.go). Job has no AppendJSON method: PlaceSpec and ChargeSpec embed
// it and would inherit it.

// writeJobFields writes a job's members inside an object the caller opens.
func writeJobFields(b *jsonbuf.Buf, j Job) {
	b.Key("machine")
	b.Str(j.Machine)
	b.Key("job_id")
	b.Str(j.ID)
}

// AppendJSON appends the request's JSON, as encoding/json gives it, to dst.
func (s PlaceSpec) AppendJSON(dst []byte) ([]byte, error) {
	return jsonbuf.Object(dst, func(b *jsonbuf.Buf) {
		writeJobFields(b, s.Job)
		b.Key("user")
		b.Str(s.User)
		b.OptStr("project", s.Project)
		b.Key("request")
		b.Append(s.Request.AppendJSON)
		b.OptUint("quote", s.Quote)
		b.OptTrue("replace", s.Replace)
	})
}

// AppendJSON appends the request's JSON, as encoding/json gives it, to dst.
func (s ChargeSpec) AppendJSON(dst []byte) ([]byte, error) {
	return jsonbuf.Object(dst, func(b *jsonbuf.Buf) {
		writeJobFields(b, s.Job)
		b.OptStr("user", s.User)
		b.OptStr("project", s.Project)
		b.Key("usage")
		b.Append(s.Usage.AppendJSON)
		b.OptTrue("incremental", s.Incremental)
		b.OptStr("reservation", s.Reservation)
	})
}

// AppendJSON appends the detail's JSON, as encoding/json gives it, to dst.
func (d Detail) AppendJSON(dst []byte) ([]byte, error) {
	return jsonbuf.Object(dst, func(b *jsonbuf.Buf) {
		b.Key("request")
		b.Append(d.Request.AppendJSON)
		b.Key("policy")
		b.Append(d.Policy.AppendJSON)
		b.OptUint("quote", d.Quote)
		b.OptStr("requested_project", d.Requested)
		b.Key("quoted")
		b.Decimal(d.Quoted)
	})
}

// AppendJSON appends the detail's JSON, as encoding/json gives it, to dst.
func (d chargeDetail) AppendJSON(dst []byte) ([]byte, error) {
	return jsonbuf.Object(dst, func(b *jsonbuf.Buf) {
		b.Key("usage")
		b.Append(d.Usage.AppendJSON)
		b.OptStr("reservation", d.Reservation)
		b.Key("explanation")
		b.Append(d.Explanation.AppendJSON)
	})
}

// AppendJSON appends the answer's JSON, as encoding/json gives it, to dst.
func (r LienResult) AppendJSON(dst []byte) ([]byte, error) {
	return jsonbuf.Object(dst, func(b *jsonbuf.Buf) {
		b.Key("lien")
		appendCarried(b, r.lienJSON, r.Lien.AppendJSON)
		b.Key("project")
		b.Str(r.Project)
		b.Key("fell_back")
		b.Bool(r.FellBack)
		b.Key("requested_project")
		b.Str(r.Requested)
		b.OptTrue("existing", r.Existing)
		b.Key("quote")
		appendCarried(b, r.quoteJSON, r.Quote.AppendJSON)
	})
}

// AppendJSON appends the answer's JSON, as encoding/json gives it, to dst.
func (r ChargeResult) AppendJSON(dst []byte) ([]byte, error) {
	return jsonbuf.Object(dst, func(b *jsonbuf.Buf) {
		b.Key("charge")
		appendCarried(b, r.chargeJSON, r.Charge.AppendJSON)
		if r.Lien != nil {
			b.Key("lien")
			appendCarried(b, r.lienJSON, r.Lien.AppendJSON)
		}
		b.Key("overran")
		b.Decimal(r.Overran)
		b.Key("released")
		b.Decimal(r.Released)
	})
}

// appendCarried writes a value as its journal entry or request record
// holds it (carried, the same encoder's output) or, when the call did not
// keep it so, by its own encoder.
func appendCarried(b *jsonbuf.Buf, carried []byte, appendJSON func([]byte) ([]byte, error)) {
	if carried != nil {
		b.Raw(carried)
		return
	}
	b.Append(appendJSON)
}
