package boltstore

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
)

// recordIn runs ws as one call of ses, as the committer runs a call, and
// fails the call after its writes when fail is set.
func recordIn(ses *session, ws []write, fail bool) error {
	return ses.runCall(func(ltx ledger.Tx) error {
		for _, w := range ws {
			ltx.(*tx).s.record(w)
		}
		if fail {
			return errors.New("the call fails")
		}
		return nil
	}, nil)
}

// logged is what the group's log record holds, read back.
func logged(t *testing.T, writes []write) []write {
	t.Helper()
	record, err := appendRecord(nil, 1, writes)
	if err != nil {
		t.Fatal(err)
	}
	_, back, _, err := readRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// TestSupersededWritesLeaveWhatAllWritesLeave: on random groups of calls
// (puts, deletions and sequences over few keys of resident, id-keyed and
// other buckets, some calls failing), the group's log record, which
// leaves out the writes marked superseded, leaves every key as all the
// successful calls' writes in order do; and so do the checkpoint's writes.
func TestSupersededWritesLeaveWhatAllWritesLeave(t *testing.T) {
	buckets := []bucketID{bucketMeta, bucketReserved, bucketLiensActive, bucketLiens, bucketAllocations, bucketJournal, bucketRequests}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		ses := newSession(nil, newOverlay(), newDecodedCache(), nil, 1)
		var kept []write // the successful calls' writes, in order
		for range 1 + rng.IntN(12) {
			var ws []write
			for range rng.IntN(8) {
				ws = append(ws, randomWrite(rng, buckets, 3))
			}
			fail := rng.IntN(4) == 0
			if err := recordIn(ses, ws, fail); (err != nil) != fail {
				t.Fatalf("seed %d: call returned %v", seed, err)
			}
			if !fail {
				kept = append(kept, ws...)
			}
		}
		want := applyToModel(kept)
		back := logged(t, ses.writes)
		if got := applyToModel(back); !maps.Equal(got, want) {
			t.Fatalf("seed %d: the log record leaves %v, the calls' writes leave %v", seed, got, want)
		}
		g := &group{writes: groupWrites{group: 1, writes: ses.writes}}
		if got := applyToModel((&Store{}).lastOfHotKeys([]*group{g})); !maps.Equal(got, want) {
			t.Fatalf("seed %d: the checkpoint's writes leave %v, the calls' writes leave %v", seed, got, want)
		}
		for _, w := range ses.writes {
			if w.superseded && keptWhole[w.bucket] {
				t.Fatalf("seed %d: a %s write is marked superseded", seed, w.bucket)
			}
		}
	}
}

// TestSupersededWrites: of a group's writes of one key, the log record
// keeps the last, and the values deferred for the others are never made;
// a failed call's write supersedes nothing; journal entries and request
// records are all kept.
func TestSupersededWrites(t *testing.T) {
	var made atomic.Int32
	sum := func(v string) write {
		return write{bucket: bucketReserved, key: []byte("acct\x00proj"), later: &deferred{make: func() ([]byte, error) {
			made.Add(1)
			return []byte(v), nil
		}}}
	}
	ses := newSession(nil, newOverlay(), newDecodedCache(), nil, 1)
	for _, v := range []string{"1", "2", "3"} {
		if err := recordIn(ses, []write{sum(v)}, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := recordIn(ses, []write{sum("lost")}, true); err == nil {
		t.Fatal("the failing call did not fail")
	}
	entry := write{bucket: bucketJournal, key: encodeUint(7), value: []byte("entry")}
	request := write{bucket: bucketRequests, key: []byte("sched\x00r1"), value: []byte("answer")}
	if err := recordIn(ses, []write{entry, entry, request, request}, false); err != nil {
		t.Fatal(err)
	}
	back := logged(t, ses.writes)
	var got []string
	for _, w := range back {
		got = append(got, fmt.Sprintf("%s=%s", w.bucket, w.value))
	}
	want := []string{"reserved=3", "journal=entry", "journal=entry", "requests=answer", "requests=answer"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the log record holds %v, want %v", got, want)
	}
	if n := made.Load(); n != 1 {
		t.Fatalf("%d deferred values made, want 1 (the last write's)", n)
	}
}
