package server

import (
	"sync"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
)

// batch runs the items of POST /v1/batch (semantics: api.BatchRequest).
func (s *Server) batch(c *call) (any, error) {
	var b api.BatchRequest
	if err := c.decode(&b); err != nil {
		return nil, err
	}
	switch n := len(b.Items); {
	case n == 0:
		return nil, api.Errorf(api.CodeInvalid, "a batch needs at least one item")
	case n > api.MaxBatchItems:
		return nil, api.Errorf(api.CodeTooLarge, "a batch holds at most %d items; this one has %d", api.MaxBatchItems, n).
			With("limit", api.MaxBatchItems).With("items", n)
	}
	results := make([]api.BatchResult, len(b.Items))
	var wg sync.WaitGroup
	for _, indices := range byJob(b.Items) {
		// Each goroutine writes only its own indices of results.
		wg.Go(func() {
			for _, i := range indices {
				results[i] = s.batchItem(c, i, b.Items[i])
			}
		})
	}
	wg.Wait()
	return api.BatchResponse{Results: results}, nil
}

// byJob groups the indices of the items by the job they name, each group in
// the items' order. A malformed item (no operation, or several) is a group
// of its own: it fails without touching the bank.
func byJob(items []api.BatchItem) [][]int {
	groups := map[lien.Job]int{}
	var out [][]int
	for i, item := range items {
		job, ok := jobOf(item)
		g, seen := groups[job]
		if !ok || !seen {
			g = len(out)
			out = append(out, nil)
			if ok {
				groups[job] = g
			}
		}
		out[g] = append(out[g], i)
	}
	return out
}

// batchItem makes item i of the batch of call c: the change its endpoint
// makes, as client c, with the item's own request id.
func (s *Server) batchItem(c *call, i int, item api.BatchItem) api.BatchResult {
	// The item is a call of its own endpoint, under its own request id.
	ic := *c
	ic.req = ledger.Request{Actor: c.req.Actor, ID: api.BatchItemID(c.req.ID, i)}
	var r api.BatchResult
	var err error
	switch {
	case operations(item) != 1:
		err = api.Errorf(api.CodeInvalid, "batch item %d must hold exactly one of lien, release and charge; it holds %d", i, operations(item))
	case item.Lien != nil:
		var placed lien.LienResult
		placed, err = s.placeLien(&ic, *item.Lien)
		r.Lien = &placed
	case item.Release != nil:
		var released ledger.Lien
		released, err = s.releaseLien(&ic, *item.Release)
		r.Release = &released
	case item.Charge != nil:
		var charged lien.ChargeResult
		charged, err = s.charge(&ic, *item.Charge)
		r.Charge = &charged
	}
	if err != nil {
		return api.BatchResult{Error: s.wireError(c.r, err)}
	}
	return r
}

// operations counts the operations an item holds.
func operations(item api.BatchItem) int {
	n := 0
	for _, set := range []bool{item.Lien != nil, item.Release != nil, item.Charge != nil} {
		if set {
			n++
		}
	}
	return n
}

// jobOf is the job an item names, if it holds exactly one operation.
func jobOf(item api.BatchItem) (lien.Job, bool) {
	switch {
	case operations(item) != 1:
		return lien.Job{}, false
	case item.Lien != nil:
		return item.Lien.Job, true
	case item.Release != nil:
		return *item.Release, true
	}
	return item.Charge.Job, true
}
