package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
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

// checkCarried wants encodeSealable, sealed, to give Encode's body and
// hash, with the previous hash sealed in, and the lien and charge the
// entry carries as their own encoders give them: the stores keep those
// bytes as the records.
func checkCarried(t *testing.T, i int, e Entry) {
	t.Helper()
	var prev []byte
	e.PrevHash = ""
	if e.Seq > 1 {
		sum := sha256.Sum256([]byte(fmt.Sprint("entry before ", i)))
		prev = sum[:]
		e.PrevHash = hex.EncodeToString(prev)
	}
	body, hash, _ := e.Encode()
	enc, err := e.encodeSealable()
	if err != nil {
		t.Fatalf("entry %d: %v", i, err)
	}
	value, err := enc.sealable.Seal(prev)
	if err != nil || !bytes.Equal(value[sha256.Size:], body) || hex.EncodeToString(value[:sha256.Size]) != hash {
		t.Fatalf("entry %d: sealed %x (%v), Encode %s %s", i, value, err, body, hash)
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

// TestSealedEntryRefusesABadHash: an entry stored with its hash given
// must give a SHA-256 in hex; anything else is refused with ErrInvalid.
func TestSealedEntryRefusesABadHash(t *testing.T) {
	for _, hash := range []string{"", "ab", strings.Repeat("ab", 33), strings.Repeat("zz", 32)} {
		if _, err := SealedEntry(hash, []byte(`{}`)); !errors.Is(err, ErrInvalid) {
			t.Errorf("hash %q: %v, want ErrInvalid", hash, err)
		}
	}
	sealed, err := SealedEntry(strings.Repeat("ab", 32), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if value, err := sealed.Seal(nil); err != nil || hex.EncodeToString(value) != strings.Repeat("ab", 32)+hex.EncodeToString([]byte(`{}`)) {
		t.Errorf("sealed entry stored as %x (%v)", value, err)
	}
}

// TestSealWantsThePreviousHash: the first entry is sealed without a
// previous hash, every other with a SHA-256, and nothing else.
func TestSealWantsThePreviousHash(t *testing.T) {
	first, err := Entry{Seq: 1, Kind: KindInit}.encodeSealable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.sealable.Seal(make([]byte, sha256.Size)); err == nil {
		t.Error("the first entry sealed with a previous hash")
	}
	second, err := Entry{Seq: 2, Kind: KindDeposit}.encodeSealable()
	if err != nil {
		t.Fatal(err)
	}
	for _, prev := range [][]byte{nil, make([]byte, sha256.Size-1)} {
		if _, err := second.sealable.Seal(prev); err == nil {
			t.Errorf("entry 2 sealed with a previous hash of %d bytes", len(prev))
		}
	}
}

// TestContentHashConcurrent: content hashes made at once on many
// goroutines (their buffers pooled) are those made one by one, for small
// requests and for one too big to pool.
func TestContentHashConcurrent(t *testing.T) {
	contents := []any{
		map[string]string{"job": "1"},
		map[string]string{"job": "2", "user": "amy"},
		map[string]string{"batch": strings.Repeat("x", 2*maxPooledRequest)},
	}
	want := make([]string, len(contents))
	for i, c := range contents {
		body, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(append([]byte(string(KindCharge)+"\x00"), body...))
		want[i] = hex.EncodeToString(sum[:])
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 300 {
				k := (g + i) % len(contents)
				got, err := contentHash(KindCharge, contents[k])
				if err == nil && got != want[k] {
					err = fmt.Errorf("content %d hashed as %s, want %s", k, got, want[k])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
