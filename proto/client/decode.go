package client

import (
	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/internal/jsonread"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// decodeFast decodes the answers a scheduler gets at every job, a lien's
// and a charge's, without encoding/json's reflection (package jsonread):
// with encoding/json they took about 35 µs of the client's CPU per job,
// a sixth of it. out must point to a zero value. It reports false, leaving
// out zero, for any other type and for an answer it does not read exactly
// as json.Unmarshal would; the caller then decodes it with json.Unmarshal.
func decodeFast(raw []byte, out any) bool {
	switch v := out.(type) {
	case *lien.LienResult:
		r := jsonread.New(raw)
		if readLienResult(r, v); r.End() {
			return true
		}
		*v = lien.LienResult{}
	case *lien.ChargeResult:
		r := jsonread.New(raw)
		if readChargeResult(r, v); r.End() {
			return true
		}
		*v = lien.ChargeResult{}
	}
	return false
}

func readLienResult(r *jsonread.Reader, v *lien.LienResult) {
	for m := r.Object(); r.Member(m); {
		switch string(r.Name()) {
		case "lien":
			readLien(r, &v.Lien)
		case "project":
			v.Project = r.Str()
		case "fell_back":
			v.FellBack = r.Bool()
		case "requested_project":
			v.Requested = r.Str()
		case "existing":
			v.Existing = r.Bool()
		case "quote":
			readAmount(r, &v.Quote)
		default:
			r.Fail()
		}
	}
}

func readChargeResult(r *jsonread.Reader, v *lien.ChargeResult) {
	for m := r.Object(); r.Member(m); {
		switch string(r.Name()) {
		case "charge":
			readCharge(r, &v.Charge)
		case "lien":
			if !r.Null() {
				v.Lien = new(ledger.Lien)
				readLien(r, v.Lien)
			}
		case "overran":
			r.Decimal(&v.Overran)
		case "released":
			r.Decimal(&v.Released)
		default:
			r.Fail()
		}
	}
}

func readLien(r *jsonread.Reader, v *ledger.Lien) {
	for m := r.Object(); r.Member(m); {
		switch name := r.Name(); string(name) {
		case "id":
			v.ID = r.Uint(64)
		case "amount":
			r.Decimal(&v.Amount)
		case "holds":
			readHolds(r, &v.Holds)
		case "charged":
			r.Decimal(&v.Charged)
		case "created":
			r.Time(&v.Created)
		case "expires":
			r.Time(&v.Expires)
		case "state":
			v.State = ledger.LienState(r.Str())
		case "detail":
			r.RawMessage(&v.Detail)
		default:
			readJobRef(r, name, &v.JobRef)
		}
	}
}

func readCharge(r *jsonread.Reader, v *ledger.Charge) {
	for m := r.Object(); r.Member(m); {
		switch name := r.Name(); string(name) {
		case "id":
			v.ID = r.Uint(64)
		case "lien":
			v.Lien = r.Uint(64)
		case "amount":
			r.Decimal(&v.Amount)
		case "debits":
			readHolds(r, &v.Debits)
		case "overdrawn":
			r.Decimal(&v.Overdrawn)
		case "refunded":
			r.Decimal(&v.Refunded)
		case "refunds":
			readHolds(r, &v.Refunds)
		case "final":
			v.Final = r.Bool()
		case "time":
			r.Time(&v.Time)
		case "detail":
			r.RawMessage(&v.Detail)
		default:
			readJobRef(r, name, &v.JobRef)
		}
	}
}

// readJobRef reads a member of an embedded ledger.JobRef, failing on any
// other.
func readJobRef(r *jsonread.Reader, name []byte, v *ledger.JobRef) {
	switch string(name) {
	case "job_id":
		v.JobID = r.Str()
	case "machine":
		v.Machine = r.Str()
	case "project":
		v.Project = r.Str()
	case "account":
		v.Account = r.Str()
	case "user":
		v.User = r.Str()
	default:
		r.Fail()
	}
}

func readHolds(r *jsonread.Reader, v *[]ledger.Hold) {
	if r.Null() {
		return // nil, as encoding/json leaves it
	}
	holds := []ledger.Hold{} // encoding/json makes the slice even for []
	for r.Array(); r.Element(); {
		holds = append(holds, ledger.Hold{})
		h := &holds[len(holds)-1]
		for m := r.Object(); r.Member(m); {
			switch string(r.Name()) {
			case "allocation":
				h.Allocation = r.Uint(64)
			case "amount":
				r.Decimal(&h.Amount)
			default:
				r.Fail()
			}
		}
	}
	*v = holds
}

func readAmount(r *jsonread.Reader, v *charge.Amount) {
	for m := r.Object(); r.Member(m); {
		switch string(r.Name()) {
		case "credits":
			r.Decimal(&v.Credits)
		case "explanation":
			readExplanation(r, &v.Explanation)
		default:
			r.Fail()
		}
	}
}

func readExplanation(r *jsonread.Reader, v *charge.Explanation) {
	for m := r.Object(); r.Member(m); {
		switch string(r.Name()) {
		case "subject":
			v.Subject = r.Str()
		case "policy":
			r.Text(&v.Policy)
		case "state":
			r.Text(&v.State)
		case "no_charge":
			v.NoCharge = r.Str()
		case "basis":
			if r.Null() {
				break
			}
			basis := []string{}
			for r.Array(); r.Element(); {
				basis = append(basis, r.Str())
			}
			v.Basis = basis
		case "items":
			readItems(r, &v.Items)
		case "time_scaled":
			r.Decimal(&v.TimeScaled)
		case "usage":
			r.Decimal(&v.Usage)
		case "multiplier":
			r.Decimal(&v.Multiplier)
		case "fees":
			r.Decimal(&v.Fees)
		case "exact":
			r.Decimal(&v.Exact)
		case "precision":
			v.Precision = int32(r.Int(32))
		default:
			r.Fail()
		}
	}
}

func readItems(r *jsonread.Reader, v *[]charge.LineItem) {
	if r.Null() {
		return
	}
	items := []charge.LineItem{}
	for r.Array(); r.Element(); {
		items = append(items, charge.LineItem{})
		it := &items[len(items)-1]
		for m := r.Object(); r.Member(m); {
			switch string(r.Name()) {
			case "type":
				it.Type = charge.RateType(r.Str())
			case "what":
				it.What = r.Str()
			case "window":
				it.Window = r.Str()
			case "quantity":
				r.Decimal(&it.Quantity)
			case "rate":
				r.Decimal(&it.Rate)
			case "seconds":
				it.Seconds = r.Int(64)
			case "multiplier":
				r.Decimal(&it.Multiplier)
			case "subtotal":
				r.Decimal(&it.Subtotal)
			default:
				r.Fail()
			}
		}
	}
	*v = items
}
