package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Kind names what a journal entry did. Kinds are stored: add, never rename.
type Kind string

// The journal entry kinds.
const (
	KindInit             Kind = "init"
	KindNodeCreate       Kind = "node_create"
	KindNodeModify       Kind = "node_modify"
	KindNodeDeactivate   Kind = "node_deactivate"
	KindUserAdd          Kind = "user_add"
	KindUserModify       Kind = "user_modify"
	KindMachineAdd       Kind = "machine_add"
	KindMachineModify    Kind = "machine_modify"
	KindDeposit          Kind = "deposit"
	KindWithdraw         Kind = "withdraw"
	KindTransfer         Kind = "transfer"
	KindRecord           Kind = "record"
	KindLienPlace        Kind = "lien_place"
	KindLienExtend       Kind = "lien_extend"
	KindLienRelease      Kind = "lien_release"
	KindLienExpire       Kind = "lien_expire"
	KindCharge           Kind = "charge"
	KindRefund           Kind = "refund"
	KindNodeReactivate   Kind = "node_reactivate"
	KindAllocationModify Kind = "allocation_modify"
	KindLienModify       Kind = "lien_modify"
)

// Kinds lists every entry kind, for validation and help texts.
var Kinds = []Kind{
	KindInit, KindNodeCreate, KindNodeModify, KindNodeDeactivate,
	KindUserAdd, KindUserModify, KindMachineAdd, KindMachineModify,
	KindDeposit, KindWithdraw, KindTransfer, KindRecord,
	KindLienPlace, KindLienExtend, KindLienRelease, KindLienExpire, KindCharge, KindRefund,
	KindNodeReactivate, KindAllocationModify, KindLienModify,
}

// Delta is the change one entry made to one allocation's amounts.
type Delta struct {
	Allocation uint64          `json:"allocation"`
	Account    string          `json:"account"`
	Amount     decimal.Decimal `json:"amount"`
	Deposited  decimal.Decimal `json:"deposited"`
}

// Entry is one journaled change. The state fields (Terms, NodeState, ...)
// carry the new value of whatever the entry created or modified; amounts move
// only through Deltas, so a replay recomputes them.
type Entry struct {
	Seq         uint64            `json:"seq"`
	Time        time.Time         `json:"time"`
	Actor       string            `json:"actor"`
	RequestID   string            `json:"request_id,omitempty"`
	Kind        Kind              `json:"kind"`
	Node        string            `json:"node,omitempty"`
	Ref         string            `json:"ref,omitempty"`
	Description string            `json:"description,omitempty"`
	Settings    *Settings         `json:"settings,omitempty"`
	NodeState   *Node             `json:"node_state,omitempty"`
	UserState   *User             `json:"user_state,omitempty"`
	Machine     *Machine          `json:"machine_state,omitempty"`
	Lien        *Lien             `json:"lien,omitempty"`
	Charge      *Charge           `json:"charge,omitempty"`
	Record      *Record           `json:"record,omitempty"`
	Terms       []AllocationTerms `json:"terms,omitempty"`
	Deltas      []Delta           `json:"deltas,omitempty"`
	// Answer is the SHA-256 of the answer kept for retries of the request
	// whose last entry this is (RequestRecord.Result), in hex.
	Answer   string `json:"answer,omitempty"`
	PrevHash string `json:"prev_hash"`
	// Hash is the SHA-256 of the stored encoding, which does not hold it
	// (entries written before the answer was anchored hold it empty).
	Hash string `json:"hash,omitempty"`
}

// Job is the job an entry is about (its lien's or its charge's), or nil.
func (e Entry) Job() *JobRef {
	switch {
	case e.Charge != nil:
		return &e.Charge.JobRef
	case e.Lien != nil:
		return &e.Lien.JobRef
	}
	return nil
}

// encodeEntry is the body of e, the bytes its hash covers: the binary
// layout (binary.go), without Hash. The hash covers PrevHash, which
// chains the entries, and Answer, which anchors the answer kept for
// retries.
func encodeEntry(e Entry) ([]byte, error) { return appendBinary(nil, e) }

// SealEntry encodes e, whose PrevHash is set, as a store keeps it.
func SealEntry(e Entry) (StoredEntry, error) {
	body, err := encodeEntry(e)
	if err != nil {
		return StoredEntry{}, err
	}
	return StoredEntry{Seq: e.Seq, Time: e.Time, Hash: sha256.Sum256(body), Body: body, Terms: IndexTerms(e)}, nil
}

// IndexTerms are what the journal's index finds an entry by, in no
// particular order and each once: the nodes it concerns, each with its
// ancestors (the node it names, the destination of a transfer, the
// accounts whose allocations it changes), so that a query about a node
// and its subtree finds it by the node's name; then its SearchTerms.
func IndexTerms(e Entry) []string {
	var terms []string
	add := func(node string) {
		for ; node != "" && !slices.Contains(terms, node); node = ParentOf(node) {
			terms = append(terms, node)
		}
	}
	add(e.Node)
	if e.Kind == KindTransfer {
		add(e.Ref)
	}
	if e.NodeState != nil {
		add(e.NodeState.Name)
	}
	for _, d := range e.Deltas {
		add(d.Account)
	}
	return append(terms, SearchTerms(e)...)
}

// SearchTerms are the terms beside the nodes under which the index lists
// an entry: its job's (JobTerm), if it is about a job, and its kind's
// (KindTerm), if its kind is one of the few a day (KindIndexed). A term
// holds a space, which no node name does, so the two never meet.
func SearchTerms(e Entry) []string {
	var terms []string
	if job := e.Job(); job != nil {
		terms = append(terms, JobTerm(job.JobID))
	}
	if KindIndexed(e.Kind) {
		terms = append(terms, KindTerm(e.Kind))
	}
	return terms
}

// JobTerm is the index term of the entries of a job's liens, charges and
// refunds, on any machine.
func JobTerm(jobID string) string { return jobTermPrefix + jobID }

// jobTermPrefix begins every JobTerm.
const jobTermPrefix = "job "

// IsJobTerm says whether an index term is a job's.
func IsJobTerm(term string) bool { return strings.HasPrefix(term, jobTermPrefix) }

// KindTerm is the index term of the entries of kind k (KindIndexed).
func KindTerm(k Kind) string { return "kind " + string(k) }

// jobKinds are the kinds of the entries about jobs: most of a busy bank's
// journal. Listing them by kind would cost every lien and charge another
// index row to answer a question whose answer is most of the journal
// anyway; every other kind is a few entries a day, indexed by kind.
var jobKinds = []Kind{KindLienPlace, KindLienExtend, KindLienRelease, KindLienExpire, KindLienModify, KindCharge, KindRefund}

// KindIndexed says whether the index lists the entries of kind k under
// KindTerm(k).
func KindIndexed(k Kind) bool { return !slices.Contains(jobKinds, k) }

// DecodeEntry decodes a stored entry. It checks that the body is the one
// its number says and sets Hash to the stored hash; it does not check the
// hash (the audit does, over the stored bytes).
func DecodeEntry(se StoredEntry) (Entry, error) { return decodeEntry(se, readWhole) }

// decodeEntry is DecodeEntry reading as much of a binary body as upTo says.
func decodeEntry(se StoredEntry, upTo int) (Entry, error) {
	e, err := decodeBody(se.Body, upTo)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: journal entry %d does not decode: %v", ErrCorrupt, se.Seq, err)
	}
	if e.Seq != se.Seq {
		return Entry{}, fmt.Errorf("%w: journal entry %d holds entry %d", ErrCorrupt, se.Seq, e.Seq)
	}
	e.Hash = hashHex(&se.Hash)
	return e, nil
}

// EntryHead is what an entry's body begins with: its time, and the
// request that made it.
type EntryHead struct {
	Time      time.Time
	Actor     string
	RequestID string
}

// decodeBody decodes a body in either layout (the JSON one whole).
func decodeBody(body []byte, upTo int) (Entry, error) {
	if binaryBody(body) {
		return decodeBinary(body, upTo)
	}
	var e Entry
	err := json.Unmarshal(body, &e)
	return e, err
}

// ReadEntryHead reads the head of an entry's body and stops there: both
// layouts begin with seq, time, actor and request_id. Decoding a whole
// JSON body (json.Unmarshal checks all of it first) to learn its time or
// its request was most of what reading an entry cost the audit and the
// queries; whoever needs the rest decodes it (DecodeEntry), and the audit
// checks the body's hash.
func ReadEntryHead(body []byte) (EntryHead, error) {
	if binaryBody(body) {
		e, err := decodeBinary(body, readHead)
		return EntryHead{Time: e.Time, Actor: e.Actor, RequestID: e.RequestID}, err
	}
	var h EntryHead
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil {
		return h, err
	} else if tok != json.Delim('{') {
		return h, errors.New("not a JSON object")
	}
	found := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return h, err
		}
		var into any
		switch key {
		case "time":
			into, found = &h.Time, true
		case "actor":
			into = &h.Actor
		case "request_id":
			into = &h.RequestID
		case "kind":
			if found {
				return h, nil
			}
			into = new(json.RawMessage)
		default:
			into = new(json.RawMessage)
		}
		if err := dec.Decode(into); err != nil {
			return h, err
		}
	}
	if !found {
		return h, errors.New("no time")
	}
	return h, nil
}

// ReadEntry reads and decodes journal entry seq.
func ReadEntry(tx Tx, seq uint64) (Entry, bool, error) {
	se, ok, err := tx.Entry(seq)
	if err != nil || !ok {
		return Entry{}, ok, err
	}
	e, err := DecodeEntry(se)
	return e, err == nil, err
}

// EachEntry calls fn with the decoded entries from..to in order until fn
// returns false or an error.
func EachEntry(tx Tx, from, to uint64, fn func(Entry) (bool, error)) error {
	return tx.Entries(from, to, func(se StoredEntry) (bool, error) {
		e, err := DecodeEntry(se)
		if err != nil {
			return false, err
		}
		return fn(e)
	})
}
