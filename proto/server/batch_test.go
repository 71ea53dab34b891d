package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
)

func lienItem(machine, job string) api.BatchItem {
	spec := placeSpec(machine, job)
	return api.BatchItem{Lien: &spec}
}

func chargeItem(machine, job string) api.BatchItem {
	usage := charge.Usage{Resources: charge.Resources{Processors: 4}, WallclockSeconds: 30, WallclockLimitSeconds: 60, State: charge.Completed}
	return api.BatchItem{Charge: &api.ChargeRequest{Job: lien.Job{Machine: machine, ID: job}, Usage: usage}}
}

func releaseItem(machine, job string) api.BatchItem {
	return api.BatchItem{Release: &api.ReleaseRequest{Machine: machine, ID: job}}
}

// batch sends items as the scheduler under request id id and wants 200.
func (s *site) batch(id string, items ...api.BatchItem) []api.BatchResult {
	s.t.Helper()
	var r api.BatchResponse
	s.ok(exchange{key: s.keys["sched"], method: http.MethodPost, target: api.PathBatch, body: api.BatchRequest{Items: items}, requestID: id}, &r)
	if len(r.Results) != len(items) {
		s.t.Fatalf("%d items, %d results", len(items), len(r.Results))
	}
	return r.Results
}

// TestBatchMixedItems: each item gets its own answer or error, in order;
// the refused items write nothing; items on one job run in order.
func TestBatchMixedItems(t *testing.T) {
	s := newSite(t)
	journal := s.JournalLen()
	big := placeSpec("hpc1", "big")
	big.Request.Resources.Processors = 32
	big.Request.WallclockLimitSeconds = 3600
	unknownUser := placeSpec("hpc1", "b2")
	unknownUser.User = "nobody"
	both := lienItem("hpc1", "b7")
	both.Charge = chargeItem("hpc1", "b7").Charge
	results := s.batch("mixed",
		lienItem("hpc1", "b1"),            // 0: placed
		chargeItem("hpc1", "b1"),          // 1: charged, after its lien
		api.BatchItem{Lien: &unknownUser}, // 2: not found
		releaseItem("hpc1", "b3"),         // 3: no lien to release
		lienItem("hpc2", "b4"),            // 4: not the scheduler's machine
		api.BatchItem{},                   // 5: no operation
		both,                              // 6: two operations
		api.BatchItem{Lien: &big},         // 7: beyond the funds
		lienItem("hpc1", "b6"),            // 8: placed
		releaseItem("hpc1", "b6"),         // 9: released, after its lien
		releaseItem("hpc2", "none"),       // 10: not the scheduler's machine
	)
	wantCodes := map[int]api.Code{2: api.CodeNotFound, 3: api.CodeNotFound, 4: api.CodeForbidden, 5: api.CodeInvalid,
		6: api.CodeInvalid, 7: api.CodeInsufficientFunds, 10: api.CodeForbidden}
	for i, r := range results {
		code, refused := wantCodes[i]
		switch {
		case refused && (r.Error == nil || r.Error.Code != code):
			t.Errorf("item %d: %+v, want error %s", i, r, code)
		case refused && (r.Lien != nil || r.Charge != nil || r.Release != nil):
			t.Errorf("item %d: a refused item has an answer too: %+v", i, r)
		case !refused && r.Err() != nil:
			t.Errorf("item %d: %v", i, r.Err())
		}
	}
	if r := results[4].Error; r != nil && r.Message != `client sched (scheduler of hpc1) may not place a lien on machine "hpc2": not one of its machines` {
		t.Errorf("item 4's refusal says %q", r.Message)
	}
	if results[0].Lien == nil || results[1].Charge == nil || results[9].Release == nil {
		t.Fatalf("answers missing: %+v", results)
	}
	wantAmount(t, "item 0's lien", results[0].Lien.Lien.Amount, "240")
	wantAmount(t, "item 1's charge", results[1].Charge.Charge.Amount, "120")
	if got := s.JournalLen() - journal; got != 4 {
		t.Errorf("the batch wrote %d journal entries, want 4 (two liens, a charge, a release)", got)
	}
	after := s.balance("chem")
	wantAmount(t, "reserved after the batch", after.Reserved, "0")
	wantAmount(t, "amount after the batch", after.Amount, "880")
}

// TestBatchRetry: a retried batch gets the first answers and applies
// nothing twice; an item changed under the same batch id is a conflict;
// an item is the same request as its endpoint's with the item's id.
func TestBatchRetry(t *testing.T) {
	s := newSite(t)
	items := []api.BatchItem{lienItem("hpc1", "r1"), lienItem("hpc2", "r2"), chargeItem("hpc1", "r1"), lienItem("hpc1", "r3")}
	first := s.batch("retry", items...)
	journal, balance := s.JournalLen(), s.balance("chem")
	s.Clock.Advance(time.Second)
	again := s.batch("retry", items...) // signed afresh: a new nonce
	firstJSON, _ := json.Marshal(first)
	againJSON, _ := json.Marshal(again)
	if !bytes.Equal(firstJSON, againJSON) {
		t.Errorf("retry answered\n%s\nfirst\n%s", againJSON, firstJSON)
	}
	if got := s.JournalLen(); got != journal {
		t.Errorf("journal grew from %d to %d on a retried batch", journal, got)
	}
	if after := s.balance("chem"); !after.Amount.Equal(balance.Amount) || !after.Reserved.Equal(balance.Reserved) {
		t.Errorf("balance moved on a retry: %+v, then %+v", balance, after)
	}

	changed := append([]api.BatchItem{}, items...)
	changed[0] = lienItem("hpc1", "r1-other")
	third := s.batch("retry", changed...)
	if third[0].Error == nil || third[0].Error.Code != api.CodeRequestConflict {
		t.Errorf("item 0 changed under the same batch id: %+v", third[0])
	}
	if third[2].Charge == nil || third[2].Charge.Charge.ID != first[2].Charge.Charge.ID {
		t.Errorf("unchanged item 2 answered %+v, first %+v", third[2], first[2])
	}

	var alone lien.LienResult
	s.ok(exchange{key: s.keys["sched"], method: http.MethodPost, target: api.PathLiens, body: *items[3].Lien, requestID: api.BatchItemID("retry", 3)}, &alone)
	if alone.Lien.ID != first[3].Lien.Lien.ID {
		t.Errorf("item 3 sent alone with its item id placed lien %d; the batch placed %d", alone.Lien.ID, first[3].Lien.Lien.ID)
	}
	if got := s.JournalLen(); got != journal {
		t.Errorf("journal grew from %d to %d", journal, got)
	}
}

// TestBatchRefusals: refusals of a batch as a whole write nothing.
func TestBatchRefusals(t *testing.T) {
	s := newSite(t)
	oversize := make([]api.BatchItem, api.MaxBatchItems+1)
	for i := range oversize {
		oversize[i] = lienItem("hpc1", "o")
	}
	batch := func(client string, body any, requestID string) exchange {
		return exchange{key: s.keys[client], method: http.MethodPost, target: api.PathBatch, body: body, requestID: requestID}
	}
	one := api.BatchRequest{Items: []api.BatchItem{lienItem("hpc1", "n")}}
	s.wantRefusals(t, []refusal{
		{"too many items", batch("sched", api.BatchRequest{Items: oversize}, "b1"),
			413, api.CodeTooLarge, "at most 1000 items; this one has 1001"},
		{"no items", batch("sched", api.BatchRequest{}, "b2"),
			400, api.CodeInvalid, "at least one item"},
		{"unknown field in an item", batch("sched", []byte(`{"items":[{"lein":{}}]}`), "b3"),
			400, api.CodeBadJSON, `unknown field "lein"`},
		{"no request id", batch("sched", one, ""),
			400, api.CodeMissingRequestID, "needs a X-Ingot-Request-Id"},
		{"a manager", batch("chemmgr", one, "b4"),
			403, api.CodeForbidden, "may not POST /v1/batch; allowed roles: admin, scheduler"},
		{"over 1 MiB", batch("sched", bytes.Repeat([]byte(" "), api.MaxBodyBytes+1), "b5"),
			413, api.CodeTooLarge, "larger than the limit"},
	})
}
