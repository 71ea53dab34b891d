package ledger

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/shopspring/decimal"
)

// An entry's body, the bytes its hash covers, is written in one of two
// layouts, told apart by the first byte:
//
//   - '{': JSON, encoding/json's encoding of Entry (every ingot before
//     schema 12 wrote it; it is still read);
//   - bodyBinary: the binary layout below, which the ledger writes now.
//
// The binary layout decodes in a tenth of JSON's time and is about half its
// size, and the audit hashes, unpacks and decodes every entry there is: a
// full audit of a long history costs what these cost. docs/storage.md
// ("Journal entries") describes it for whoever verifies a chain without
// ingot. The fields come in this order, the head and the deltas first so
// that a statement stops reading there, the big opaque details last:
//
//	0x02 seq time actor request_id kind node ref description
//	deltas answer prev_hash terms lien charge rest
//
// An unsigned number is a uvarint, a signed one a varint (encoding/binary's);
// a string is its length (uvarint) and its bytes; a time is its Unix
// seconds (varint), nanoseconds (uvarint) and zone offset in seconds
// (varint, 0 for UTC); an amount is its exponent (varint) and coefficient: 0
// then the coefficient as a varint when it fits in 64 bits, else 2n + sign (1
// for negative) and its n-byte big-endian magnitude (a zero is written with
// exponent 0, and any zero read is the zero decimal); a hash is 0 (none), 1
// and 32 bytes (written as 64 lowercase hex digits), or 2 and a string; a
// list is 0 (none) or n+1 and its n items; a lien or a charge is 0 (none) or
// 1 and its fields in Lien's and Charge's order, Final as one byte and
// Detail as a string; rest is a string holding the JSON object of the
// entry's settings, node_state, user_state, machine_state and record (as
// in the JSON layout), empty when it has none of them.
//
// A field added to Entry, Lien, Charge, Hold, Delta, AllocationTerms or
// JobRef needs a new layout, with a first byte of its own, beside this
// one (TestBinaryLayoutCoversEveryField fails until then); one added to
// the types in rest needs none.
const bodyBinary = 0x02

// hashHex is hash in hex, made with one allocation (hex.EncodeToString
// makes two): the audit makes three for every entry.
func hashHex(hash *[32]byte) string {
	var buf [64]byte
	hex.Encode(buf[:], hash[:])
	return string(buf[:])
}

// binaryBody says whether body is in the binary layout.
func binaryBody(body []byte) bool { return len(body) > 0 && body[0] == bodyBinary }

// entryRest is the part of an entry the binary layout keeps as JSON: the
// state of rarely changed things, whose types grow new fields.
type entryRest struct {
	Settings  *Settings `json:"settings,omitempty"`
	NodeState *Node     `json:"node_state,omitempty"`
	UserState *User     `json:"user_state,omitempty"`
	Machine   *Machine  `json:"machine_state,omitempty"`
	Record    *Record   `json:"record,omitempty"`
}

// appendBinary appends e (but its Hash) in the binary layout to dst.
func appendBinary(dst []byte, e Entry) ([]byte, error) {
	w := bodyWriter(append(dst, bodyBinary))
	w.uint(e.Seq)
	w.time(e.Time)
	w.string(e.Actor)
	w.string(e.RequestID)
	w.string(string(e.Kind))
	w.string(e.Node)
	w.string(e.Ref)
	w.string(e.Description)
	w.list(len(e.Deltas), e.Deltas == nil)
	for _, d := range e.Deltas {
		w.uint(d.Allocation)
		w.string(d.Account)
		w.amount(d.Amount)
		w.amount(d.Deposited)
	}
	w.hash(e.Answer)
	w.hash(e.PrevHash)
	w.list(len(e.Terms), e.Terms == nil)
	for _, t := range e.Terms {
		w.terms(t)
	}
	for _, d := range [][]byte{e.Lien.detail(), e.Charge.detail()} {
		if len(d) > 0 && !json.Valid(d) {
			return nil, fmt.Errorf("ledger: encode entry %d: a detail is not JSON", e.Seq)
		}
	}
	if w.present(e.Lien != nil) {
		l := e.Lien
		w.uint(l.ID)
		w.job(l.JobRef)
		w.amount(l.Amount)
		w.holds(l.Holds)
		w.amount(l.Charged)
		w.time(l.Created)
		w.time(l.Expires)
		w.string(string(l.State))
		w.bytes(l.Detail)
	}
	if w.present(e.Charge != nil) {
		c := e.Charge
		w.uint(c.ID)
		w.job(c.JobRef)
		w.uint(c.Lien)
		w.amount(c.Amount)
		w.holds(c.Debits)
		w.amount(c.Overdrawn)
		w.amount(c.Refunded)
		w.holds(c.Refunds)
		w.present(c.Final)
		w.time(c.Time)
		w.bytes(c.Detail)
	}
	rest := entryRest{e.Settings, e.NodeState, e.UserState, e.Machine, e.Record}
	if rest == (entryRest{}) {
		w.string("")
	} else {
		raw, err := json.Marshal(rest)
		if err != nil {
			return nil, fmt.Errorf("ledger: encode entry %d: %w", e.Seq, err)
		}
		w.bytes(raw)
	}
	return w, nil
}

func (l *Lien) detail() json.RawMessage {
	if l == nil {
		return nil
	}
	return l.Detail
}

func (c *Charge) detail() json.RawMessage {
	if c == nil {
		return nil
	}
	return c.Detail
}

type bodyWriter []byte

func (w *bodyWriter) uint(v uint64) { *w = binary.AppendUvarint(*w, v) }
func (w *bodyWriter) int(v int64)   { *w = binary.AppendVarint(*w, v) }

func (w *bodyWriter) string(s string) {
	w.uint(uint64(len(s)))
	*w = append(*w, s...)
}

func (w *bodyWriter) bytes(b []byte) {
	w.uint(uint64(len(b)))
	*w = append(*w, b...)
}

func (w *bodyWriter) time(t time.Time) {
	_, offset := t.Zone()
	w.int(t.Unix())
	w.uint(uint64(t.Nanosecond()))
	w.int(int64(offset))
}

func (w *bodyWriter) amount(d decimal.Decimal) {
	if d.IsZero() { // one zero, whatever its exponent: the one decoding gives
		w.int(0)
		w.uint(0)
		w.int(0)
		return
	}
	w.int(int64(d.Exponent()))
	c := d.Coefficient()
	if c.IsInt64() {
		w.uint(0)
		w.int(c.Int64())
		return
	}
	mag := c.Bytes()
	sign := uint64(0)
	if c.Sign() < 0 {
		sign = 1
	}
	w.uint(2*uint64(len(mag)) + sign)
	*w = append(*w, mag...)
}

func (w *bodyWriter) hash(h string) {
	if h == "" {
		w.uint(0)
		return
	}
	if raw, err := hex.DecodeString(h); err == nil && len(raw) == 32 && hex.EncodeToString(raw) == h {
		w.uint(1)
		*w = append(*w, raw...)
		return
	}
	w.uint(2)
	w.string(h)
}

func (w *bodyWriter) list(n int, none bool) {
	if none {
		w.uint(0)
	} else {
		w.uint(uint64(n) + 1)
	}
}

func (w *bodyWriter) present(yes bool) bool {
	if yes {
		*w = append(*w, 1)
	} else {
		*w = append(*w, 0)
	}
	return yes
}

func (w *bodyWriter) terms(t AllocationTerms) {
	w.uint(t.ID)
	w.string(t.Account)
	w.amount(t.CreditLimit)
	w.time(t.Start)
	w.time(t.End)
	w.string(t.Machine)
	w.string(t.Description)
	w.time(t.Created)
}

func (w *bodyWriter) job(j JobRef) {
	w.string(j.JobID)
	w.string(j.Machine)
	w.string(j.Project)
	w.string(j.Account)
	w.string(j.User)
}

func (w *bodyWriter) holds(hs []Hold) {
	w.list(len(hs), hs == nil)
	for _, h := range hs {
		w.uint(h.Allocation)
		w.amount(h.Amount)
	}
}

// AppendAllocation appends a in the binary layout of an allocation to
// dst: bodyBinary, its terms as in an entry's, its amount and what was
// deposited. A store may keep allocations so (boltstore does); the audit
// reads the state of an allocation after every entry that changed it.
func AppendAllocation(dst []byte, a Allocation) []byte {
	w := bodyWriter(append(dst, bodyBinary))
	w.terms(a.AllocationTerms)
	w.amount(a.Amount)
	w.amount(a.Deposited)
	return w
}

// BinaryAllocation says whether raw is an allocation in the binary layout.
func BinaryAllocation(raw []byte) bool { return binaryBody(raw) }

// DecodeAllocation decodes what AppendAllocation wrote.
func DecodeAllocation(raw []byte) (Allocation, error) {
	if !binaryBody(raw) {
		return Allocation{}, errors.New("not an allocation in the binary layout")
	}
	r := bodyReader{b: raw[1:]}
	a := Allocation{AllocationTerms: r.terms(), Amount: r.amount(), Deposited: r.amount()}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after its end", len(r.b))
	}
	return a, r.err
}

// How much of a binary body decodeBinary reads.
const (
	readHead  = iota // seq to description
	readMoves        // and the deltas
	readWhole        // everything
	// readHashed is everything but the check that a lien's and a charge's
	// details are JSON, for a body whose hash the audit found right:
	// appendBinary writes only JSON there.
	readHashed
)

// decodeBinary decodes a body in the binary layout, as far as upTo says.
func decodeBinary(body []byte, upTo int) (Entry, error) {
	r := bodyReader{b: body[1:], trustDetails: upTo == readHashed}
	defer r.done()
	var e Entry
	e.Seq = r.uint()
	e.Time = r.time()
	e.Actor = r.name()
	e.RequestID = r.string()
	e.Kind = Kind(r.name())
	e.Node = r.name()
	e.Ref = r.string()
	e.Description = r.string()
	if upTo == readHead {
		return e, r.err
	}
	if n, ok := r.list(); ok {
		e.Deltas = make([]Delta, n)
		for i := range e.Deltas {
			e.Deltas[i] = Delta{Allocation: r.uint(), Account: r.name(), Amount: r.amount(), Deposited: r.amount()}
		}
	}
	if upTo == readMoves {
		return e, r.err
	}
	e.Answer = r.hash()
	e.PrevHash = r.hash()
	if n, ok := r.list(); ok {
		e.Terms = make([]AllocationTerms, n)
		for i := range e.Terms {
			e.Terms[i] = r.terms()
		}
	}
	if r.present() {
		e.Lien = &Lien{ID: r.uint(), JobRef: r.job(), Amount: r.amount(), Holds: r.holds(), Charged: r.amount(),
			Created: r.time(), Expires: r.time(), State: LienState(r.name()), Detail: r.detail()}
	}
	if r.present() {
		e.Charge = &Charge{ID: r.uint(), JobRef: r.job(), Lien: r.uint(), Amount: r.amount(), Debits: r.holds(),
			Overdrawn: r.amount(), Refunded: r.amount(), Refunds: r.holds(), Final: r.present(), Time: r.time(), Detail: r.detail()}
	}
	if rest := r.bytes(); len(rest) > 0 && r.err == nil {
		var x entryRest
		if err := json.Unmarshal(rest, &x); err != nil {
			return e, fmt.Errorf("its state: %v", err)
		}
		e.Settings, e.NodeState, e.UserState, e.Machine, e.Record = x.Settings, x.NodeState, x.UserState, x.Machine, x.Record
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after its end", len(r.b))
	}
	return e, r.err
}

// bodyReader reads a binary body; its first error stops it, and every
// read after that returns a zero value.
type bodyReader struct {
	b            []byte
	err          error
	trustDetails bool
	names        *nameTable
}

var errShort = errors.New("it ends inside a field")

func (r *bodyReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *bodyReader) uint() uint64 { return readVarint(r, binary.Uvarint) }
func (r *bodyReader) int() int64   { return readVarint(r, binary.Varint) }

// readVarint reads a number with read (binary.Uvarint or binary.Varint).
func readVarint[T uint64 | int64](r *bodyReader, read func([]byte) (T, int)) T {
	v, n := read(r.b)
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes is the next length-prefixed field, in the body's memory.
func (r *bodyReader) bytes() []byte {
	n := r.uint()
	if n > uint64(len(r.b)) {
		r.fail(errShort)
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *bodyReader) string() string { return string(r.bytes()) }

// detail is a lien's or a charge's detail, checked to be JSON (whoever
// reads an entry may encode it so).
func (r *bodyReader) detail() json.RawMessage {
	b := r.bytes()
	if len(b) == 0 {
		return nil
	}
	if !r.trustDetails && !json.Valid(b) {
		r.fail(errors.New("a detail is not JSON"))
		return nil
	}
	return json.RawMessage(append([]byte(nil), b...))
}

func (r *bodyReader) time() time.Time {
	sec, nsec, offset := r.int(), r.uint(), r.int()
	if nsec >= 1e9 || offset <= -86400 || offset >= 86400 {
		r.fail(errors.New("a time is out of range"))
	}
	if r.err != nil {
		return time.Time{}
	}
	t := time.Unix(sec, int64(nsec)).UTC()
	if offset != 0 {
		t = t.In(time.FixedZone("", int(offset)))
	}
	return t
}

func (r *bodyReader) amount() decimal.Decimal {
	exp := r.int()
	if exp != int64(int32(exp)) {
		r.fail(errors.New("an amount's exponent is out of range"))
	}
	size := r.uint()
	if r.err != nil {
		return decimal.Decimal{}
	}
	if size == 0 {
		c := r.int()
		if c == 0 {
			return decimal.Decimal{} // zero at any exponent (and no big.Int made: many amounts are zero)
		}
		return decimal.New(c, int32(exp))
	}
	if size/2 > uint64(len(r.b)) {
		r.fail(errShort)
		return decimal.Decimal{}
	}
	c := new(big.Int).SetBytes(r.b[:size/2])
	r.b = r.b[size/2:]
	if c.Sign() == 0 {
		return decimal.Decimal{}
	}
	if size%2 == 1 {
		c.Neg(c)
	}
	return decimal.NewFromBigInt(c, int32(exp))
}

func (r *bodyReader) hash() string {
	switch r.uint() {
	case 0:
		return ""
	case 1:
		if len(r.b) < 32 {
			r.fail(errShort)
			return ""
		}
		h := hashHex((*[32]byte)(r.b))
		r.b = r.b[32:]
		return h
	case 2:
		return r.string()
	}
	r.fail(errors.New("a hash of no known form"))
	return ""
}

// list reads a list's length: ok is false for none. A length greater than
// the bytes left (every item takes one at least) is refused before
// anything is made for it.
func (r *bodyReader) list() (n int, ok bool) {
	v := r.uint()
	if v == 0 || r.err != nil {
		return 0, false
	}
	if v-1 > uint64(len(r.b)) {
		r.fail(errShort)
		return 0, false
	}
	return int(v - 1), true
}

func (r *bodyReader) present() bool {
	if len(r.b) == 0 {
		r.fail(errShort)
		return false
	}
	b := r.b[0]
	r.b = r.b[1:]
	if b > 1 {
		r.fail(errors.New("a flag is neither 0 nor 1"))
	}
	return b == 1
}

func (r *bodyReader) terms() AllocationTerms {
	return AllocationTerms{ID: r.uint(), Account: r.string(), CreditLimit: r.amount(), Start: r.time(), End: r.time(),
		Machine: r.string(), Description: r.string(), Created: r.time()}
}

func (r *bodyReader) job() JobRef {
	return JobRef{JobID: r.string(), Machine: r.name(), Project: r.name(), Account: r.name(), User: r.name()}
}

// name is a string that many entries share (a kind, an account, a
// machine, a user): the same string each time, not a copy for every
// entry, from a table of those read before on this goroutine (names).
func (r *bodyReader) name() string {
	b := r.bytes()
	if r.names == nil {
		r.names = names.Get().(*nameTable)
		if len(r.names.m) > maxNames {
			clear(r.names.m)
		}
	}
	if s, ok := r.names.m[string(b)]; ok {
		return s
	}
	s := string(b)
	r.names.m[s] = s
	return s
}

// nameTable is a table of names, for one goroutine at a time.
type nameTable struct{ m map[string]string }

// names are the tables of names; maxNames bounds each: a table with more
// starts again empty.
var names = sync.Pool{New: func() any { return &nameTable{m: map[string]string{}} }}

const maxNames = 1024

// done gives the reader's table of names back.
func (r *bodyReader) done() {
	if r.names != nil {
		names.Put(r.names)
		r.names = nil
	}
}

func (r *bodyReader) holds() []Hold {
	n, ok := r.list()
	if !ok {
		return nil
	}
	hs := make([]Hold, n)
	for i := range hs {
		hs[i] = Hold{Allocation: r.uint(), Amount: r.amount()}
	}
	return hs
}
