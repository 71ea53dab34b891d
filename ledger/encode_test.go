package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/internal/jsonbuf/jsontest"
)

// The plain types have the fields and tags of the ledger's types but none
// of their methods, so encoding/json encodes them by reflection: the
// reference the hand-written encoders must match. (Their nested liens and
// charges use the hand-written encoders, which are checked on their own.)
type (
	plainLien       Lien
	plainCharge     Charge
	plainAllocation Allocation
	plainEntry      Entry
)

// TestEncodersMatchEncodingJSON fills every field of entries, liens,
// charges and allocations with random values (tricky strings, decimals,
// times, empty and nil slices, unset optional fields) and wants the
// hand-written encoders to give encoding/json's bytes, or to refuse what
// it refuses.
func TestEncodersMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		var e Entry
		jsontest.Fill(r, reflect.ValueOf(&e).Elem())
		e.Hash = "" // as Encode has it
		body, _, err := e.Encode()
		jsontest.Same(t, fmt.Sprintf("entry %d", i), body, err, plainEntry(e))
		if e.Lien != nil {
			jsontest.Appends(t, "lien", e.Lien.AppendJSON, plainLien(*e.Lien))
		}
		if e.Charge != nil {
			jsontest.Appends(t, "charge", e.Charge.AppendJSON, plainCharge(*e.Charge))
		}
		if err == nil {
			checkCarried(t, i, e)
		}
		var a Allocation
		jsontest.Fill(r, reflect.ValueOf(&a).Elem())
		got, err := EncodeAllocation(a)
		jsontest.Same(t, "allocation", got, err, plainAllocation(a))
		// What embeds an allocation still encodes all its fields.
		status := AllocationStatus{Allocation: a, Reserved: a.Amount, Active: true}
		got, err = json.Marshal(status)
		type plainStatus struct {
			plainAllocation
			Reserved decimal.Decimal `json:"reserved"`
			Active   bool            `json:"active"`
		}
		jsontest.Same(t, "allocation status", got, err, plainStatus{plainAllocation(a), a.Amount, true})
	}
}

// TestEncodersRefuseWhatEncodingJSONRefuses: a time outside years 0 to
// 9999 is an error, as in encoding/json.
func TestEncodersRefuseWhatEncodingJSONRefuses(t *testing.T) {
	l := Lien{Created: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := l.MarshalJSON(); err == nil {
		t.Error("a lien created in year 10000 encoded")
	}
	if _, _, err := (Entry{Lien: &l}).Encode(); err == nil {
		t.Error("an entry with a lien created in year 10000 encoded")
	}
}

// TestContentHashIsUnchanged: a request's hash is still SHA-256 of its
// kind, a zero byte and json.Marshal's bytes, whether the request has an
// AppendJSON method (a lien here) or not, and however long it is, so that
// the request records stored before still match their retries.
func TestContentHashIsUnchanged(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 200 {
		var l Lien
		jsontest.Fill(r, reflect.ValueOf(&l).Elem())
		if i%4 == 0 {
			l.Holds = make([]Hold, 30) // beyond contentHash's buffer
		}
		for _, content := range []any{l, plainLien(l)} {
			got, err := contentHash(KindLienPlace, content)
			body, wantErr := json.Marshal(content)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("case %d: error %v, encoding/json's %v", i, err, wantErr)
			}
			sum := sha256.Sum256(append([]byte(string(KindLienPlace)+"\x00"), body...))
			if want := hex.EncodeToString(sum[:]); wantErr == nil && got != want {
				t.Fatalf("case %d (%T, %d bytes): hash %s, want %s", i, content, len(body), got, want)
			}
		}
	}
}

// checkCarried wants encode to give Encode's body and hash, and the lien
// and charge the entry carries as their own encoders give them: the
// stores keep those bytes as the records.
func checkCarried(t *testing.T, i int, e Entry) {
	t.Helper()
	body, hash, _ := e.Encode()
	enc, err := e.encode()
	if err != nil || !bytes.Equal(enc.body, body) || enc.hash != hash {
		t.Fatalf("entry %d: encode gives %s %s (%v), Encode %s %s", i, enc.body, enc.hash, err, body, hash)
	}
	for _, c := range []struct {
		what    string
		carried []byte
		set     bool
		encode  func([]byte) ([]byte, error)
	}{
		{"lien", enc.lien, e.Lien != nil, func(dst []byte) ([]byte, error) { return e.Lien.AppendJSON(dst) }},
		{"charge", enc.charge, e.Charge != nil, func(dst []byte) ([]byte, error) { return e.Charge.AppendJSON(dst) }},
	} {
		if !c.set {
			if c.carried != nil {
				t.Fatalf("entry %d carries no %s, encode gives %s", i, c.what, c.carried)
			}
			continue
		}
		want, _ := c.encode(nil)
		if !bytes.Equal(c.carried, want) {
			t.Fatalf("entry %d: the %s encode gives is\n%s\nits encoder's is\n%s", i, c.what, c.carried, want)
		}
		if cap(c.carried) != len(c.carried) {
			t.Fatalf("entry %d: the %s's slice has room to append into the body", i, c.what)
		}
	}
}
