package boltstore_test

import (
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore"
)

// A request record whose answer is given as RequestRecord.Answer is
// encoded once, before Update returns, whether the log or a read in the
// committer needs it first; an answer that cannot be encoded fails its
// call like a failed disk write, with nothing of the call kept, and the
// store goes on.
func TestDeferredAnswers(t *testing.T) {
	s := openReopenable(t)
	hash := strings.Repeat("ab", 32)
	at := time.Date(2026, 11, 22, 19, 0, 0, 0, time.UTC)
	var made atomic.Int32
	answer := func(body string) func([]byte) ([]byte, error) {
		return func(dst []byte) ([]byte, error) {
			made.Add(1)
			return append(dst, body...), nil
		}
	}
	boom := errors.New("boom")
	failing := func([]byte) ([]byte, error) { return nil, boom }
	key := func(id string) ledger.RequestKey { return ledger.RequestKey{Client: "sched", ID: id} }

	// Made by the log's writer, once, before Update returns.
	if err := s.Update(func(tx ledger.Tx) error {
		return tx.PutRequest(key("1"), ledger.RequestRecord{ContentHash: hash, Answer: answer(`{"n":1}`), Deferred: true, Seq: 1, Time: at})
	}); err != nil {
		t.Fatal(err)
	}
	if n := made.Load(); n != 1 {
		t.Fatalf("answer made %d times by the time Update returned, want 1", n)
	}

	// Read back in the call that stored it: made by the committer, and
	// not again by the log's writer.
	if err := s.Update(func(tx ledger.Tx) error {
		if err := tx.PutRequest(key("2"), ledger.RequestRecord{ContentHash: hash, Answer: answer(`{"n":2}`), Deferred: true, Seq: 2, Time: at}); err != nil {
			return err
		}
		r, ok, err := tx.Request(key("2"))
		if err != nil || !ok || string(r.Result) != `{"n":2}` || r.ContentHash != hash || r.Seq != 2 {
			return errors.Join(err, errors.New("the committer read back something else: "+string(r.Result)))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := made.Load(); n != 2 {
		t.Fatalf("answers made %d times, want 2 (one each)", n)
	}

	// An answer that cannot be made fails its call, with the node the
	// call made; so does a call that reads such an answer back, though
	// its function sees no error.
	for _, readBack := range []bool{false, true} {
		err := s.Update(func(tx ledger.Tx) error {
			if err := tx.PutNode(ledger.Node{Name: "lost"}); err != nil {
				return err
			}
			if err := tx.PutRequest(key("bad"), ledger.RequestRecord{ContentHash: hash, Answer: failing, Deferred: true, Seq: 3, Time: at}); err != nil {
				return err
			}
			if readBack {
				_, _, err := tx.Request(key("bad"))
				return err
			}
			return nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("read back %v: Update returned %v, want the answer's error", readBack, err)
		}
		if err := s.View(func(tx ledger.Tx) error {
			if _, ok, err := tx.Node("lost"); ok || err != nil {
				t.Errorf("read back %v: the failed call's node is kept (%v)", readBack, err)
			}
			if _, ok, err := tx.Request(key("bad")); ok || err != nil {
				t.Errorf("read back %v: the failed call's request is kept (%v)", readBack, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}

	// The store goes on, and what it made durable is there after a
	// reopen (from the log, or the file once checkpointed).
	if err := s.Update(func(tx ledger.Tx) error {
		return tx.PutRequest(key("3"), ledger.RequestRecord{ContentHash: hash, Answer: answer(`{"n":3}`), Deferred: true, Seq: 4, Time: at})
	}); err != nil {
		t.Fatalf("after a failed answer: %v", err)
	}
	s.reopen(t)
	if err := s.View(func(tx ledger.Tx) error {
		for id, want := range map[string]string{"1": `{"n":1}`, "2": `{"n":2}`, "3": `{"n":3}`} {
			r, ok, err := tx.Request(key(id))
			if err != nil || !ok || string(r.Result) != want || !r.Time.Equal(at) {
				t.Errorf("request %s after reopening: %q %v %v, want %s", id, r.Result, ok, err, want)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestAnswersMadeAtOnce: an answer that is not deferred is appended to the
// record's header within PutRequest, so the call reads it back and a
// failure is PutRequest's own, which the call may return or not.
func TestAnswersMadeAtOnce(t *testing.T) {
	s := openReopenable(t)
	hash := strings.Repeat("cd", 32)
	at := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	key := ledger.RequestKey{Client: "sched", ID: "now"}
	boom := errors.New("boom")
	if err := s.Update(func(tx ledger.Tx) error {
		var given []byte
		err := tx.PutRequest(key, ledger.RequestRecord{ContentHash: hash, Seq: 7, Time: at,
			Answer: func(dst []byte) ([]byte, error) { given = dst; return nil, boom }})
		if !errors.Is(err, boom) {
			t.Errorf("PutRequest with a failing answer returned %v, want %v", err, boom)
		}
		if len(given) == 0 {
			t.Errorf("the answer was not given the record's header to append to")
		}
		made := false
		if err := tx.PutRequest(key, ledger.RequestRecord{ContentHash: hash, Seq: 7, Time: at,
			Answer: func(dst []byte) ([]byte, error) { made = true; return append(dst, `{"n":7}`...), nil }}); err != nil {
			return err
		}
		if !made {
			t.Errorf("PutRequest returned before making the answer")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.reopen(t)
	if err := s.View(func(tx ledger.Tx) error {
		r, ok, err := tx.Request(key)
		if err != nil || !ok || string(r.Result) != `{"n":7}` || r.ContentHash != hash || r.Seq != 7 || !r.Time.Equal(at) {
			t.Errorf("request after reopening: %+v %v %v", r, ok, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// reopenable is a store in a test's directory that the test can close and
// open again; the store it holds at the end is closed.
type reopenable struct {
	*boltstore.Store
	path string
}

func openReopenable(t *testing.T) *reopenable {
	r := &reopenable{path: filepath.Join(t.TempDir(), "bank.db")}
	r.reopen(t)
	t.Cleanup(func() { r.Close() })
	return r
}

// reopen closes the store, if open, and opens its file again.
func (r *reopenable) reopen(t *testing.T) {
	t.Helper()
	if r.Store != nil {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s, err := boltstore.Open(r.path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Store = s
}
