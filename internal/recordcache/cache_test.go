package recordcache

import (
	"strconv"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
)

// TestLayers: a lookup finds the newest layer's record first, then the
// cache's; what a layer wrote is not replaced by a read; commit moves the
// writes in, and records the cache does not keep go out of it.
func TestLayers(t *testing.T) {
	c := New()
	c.Remember("n", ledger.Node{Name: "old"})
	call, group := Writes{}, Writes{}
	group.Put("n", ledger.Node{Name: "group"})
	if v, ok := c.Lookup("n", call, group); !ok || v.(ledger.Node).Name != "group" {
		t.Fatalf("lookup: %v %v, want the group's write", v, ok)
	}
	call.Put("n", ledger.Node{Name: "call"})
	if v, _ := c.Lookup("n", call, group); v.(ledger.Node).Name != "call" {
		t.Fatalf("lookup: %v, want the call's write", v)
	}
	c.Remember("n", ledger.Node{Name: "read"}, call, group)
	if v, _ := c.Lookup("n"); v.(ledger.Node).Name != "old" {
		t.Fatalf("a read replaced the cache's record while a layer had written it: %v", v)
	}
	// A finished lien is not kept: its write forgets the cached copy.
	c.Remember("l", ledger.Lien{ID: 1, State: ledger.LienActive})
	call.Put("l", ledger.Lien{ID: 1, State: "settled"})
	if _, ok := c.Lookup("l", call); ok {
		t.Fatal("a finished lien written is looked up")
	}
	call.Put("gone", Absent{})
	call.Forget("index")
	c.Remember("index", []uint64{1})
	group.Merge(call)
	c.Commit(group)
	for key, want := range map[string]bool{"n": true, "l": false, "gone": true, "index": false} {
		if _, ok := c.Lookup(key); ok != want {
			t.Errorf("after the commit, %s known: %v, want %v", key, ok, want)
		}
	}
	if v, _ := c.Lookup("gone"); v != (Absent{}) {
		t.Errorf("a deletion committed reads %v, want Absent", v)
	}
}

// TestGetCopies: Get reads once, then answers from the cache, and never
// hands out the cache's own slices.
func TestGetCopies(t *testing.T) {
	c := New()
	reads := 0
	read := func() (ledger.User, bool, error) {
		reads++
		return ledger.User{Name: "amy", Memberships: []ledger.Membership{{Node: "chem"}}}, true, nil
	}
	u, _, _ := Get(c, "u", nil, read)
	u.Memberships[0].Node = "changed"
	again, ok, err := Get(c, "u", nil, read)
	if err != nil || !ok || reads != 1 {
		t.Fatalf("second Get: %v %v, %d reads, want one read", ok, err, reads)
	}
	if again.Memberships[0].Node != "chem" {
		t.Errorf("a caller's change reached the cache: %v", again.Memberships)
	}
	none := func() (ledger.User, bool, error) { reads++; return ledger.User{}, false, nil }
	for range 2 {
		if _, ok, _ := Get(c, "missing", nil, none); ok {
			t.Fatal("a missing record found")
		}
	}
	if reads != 2 {
		t.Errorf("%d reads, want the missing record read once", reads)
	}
}

// TestBounded: past Max records a commit starts the cache again.
func TestBounded(t *testing.T) {
	c := New()
	for i := range Max {
		c.Remember(strconv.Itoa(i), ledger.Settings{})
	}
	w := Writes{}
	w.Put("new", ledger.Settings{})
	c.Commit(w)
	if _, ok := c.Lookup("0"); ok || len(c.m) != 1 {
		t.Errorf("the cache keeps %d records after passing its bound, want only the new one", len(c.m))
	}
}
