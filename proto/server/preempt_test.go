package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// withCondo makes chem a condo: chem.lab1 owns 600 of its 1000 credits,
// chem.pool (any user, shares, accepting surplus) owns nothing and holds
// the whole account with five jobs of 200 on hpc1, p0 to p4.
func (s *site) withCondo() {
	s.t.Helper()
	pool := ledger.NodeSpec{Name: "chem.pool", AnyUser: true, Policy: ledger.Policy{QuotaKind: ledger.QuotaShares, Quota: decimal.RequireFromString("1"), AcceptSurplus: true}}
	if _, err := s.CreateNode(context.Background(), s.Req(), pool); err != nil {
		s.t.Fatal(err)
	}
	owns := ledger.Policy{Ownership: decimal.RequireFromString("600")}
	if _, err := s.ModifyNode(context.Background(), s.Req(), "chem.lab1", ledger.NodeChange{Policy: &owns}); err != nil {
		s.t.Fatal(err)
	}
	for k := range 5 {
		p := placeSpec("hpc1", fmt.Sprint("p", k))
		p.Project, p.Request = "chem.pool", charge.Request{Resources: charge.Resources{Processors: 1}, WallclockLimitSeconds: 200}
		var r lien.LienResult
		s.ok(exchange{key: s.keys["root"], method: "POST", target: api.PathLiens, body: p, requestID: fmt.Sprint("pool-", k)}, &r)
	}
}

// TestPreemptEndpoint: GET /v1/preempt answers every role that reads the
// project; an admin, the scheduler and a manager of the account see the
// jobs, a user of the owner only what each holds; a refused lien carries
// the same answer in its details.
func TestPreemptEndpoint(t *testing.T) {
	s := newSite(t)
	s.addClient("bob", clients.RoleUser, "bob")
	s.withCondo()
	target := api.PathPreempt + "?project=chem.lab1&amount=300&machine=hpc1"
	for _, c := range []struct {
		client string
		hidden bool
	}{{"root", false}, {"sched", false}, {"chemmgr", false}, {"amy", true}} {
		t.Run(c.client, func(t *testing.T) {
			var p ledger.Preemption
			s.ok(exchange{key: s.keys[c.client], method: "GET", target: target}, &p)
			if p.Outcome != "preempt" || len(p.Victims) != 2 {
				t.Fatalf("%+v", p)
			}
			for _, v := range p.Victims {
				if v.Hidden != c.hidden || (v.JobID == "") != c.hidden || (v.Project == "") != c.hidden || !v.Held.Equal(decimal.RequireFromString("200")) {
					t.Errorf("victim %+v, want hidden=%v", v, c.hidden)
				}
			}
		})
	}
	wantError(t, s.do(exchange{key: s.keys["bob"], method: "GET", target: target}), http.StatusForbidden, api.CodeForbidden, "may not read chem.lab1")
	wantError(t, s.do(exchange{key: s.keys["root"], method: "GET", target: api.PathPreempt + "?project=chem.lab1&amount=-3"}),
		http.StatusBadRequest, api.CodeInvalid, "/v1/preempt: amount")

	spec := placeSpec("hpc1", "owner")
	spec.Request = charge.Request{Resources: charge.Resources{Processors: 1}, WallclockLimitSeconds: 300}
	w := s.do(exchange{key: s.keys["sched"], method: "POST", target: api.PathLiens, body: spec, requestID: "owner-1"})
	wantError(t, w, http.StatusConflict, api.CodeInsufficientFunds, "chem.lab1 is underfed by 600: preempt 2 jobs (top-down) to free 400")
	var refused struct {
		Details struct {
			Preemption ledger.Preemption `json:"preemption"`
		} `json:"details"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &refused); err != nil {
		t.Fatal(err)
	}
	victims := refused.Details.Preemption.Victims
	if len(victims) != 2 || victims[0].JobID != "p4" || victims[1].JobID != "p3" {
		t.Fatalf("details: %s", w.Body)
	}
	for _, v := range victims {
		var l ledger.Lien
		s.ok(exchange{key: s.keys["sched"], method: "POST", target: api.PathRelease, body: lien.Job{Machine: v.Machine, ID: v.JobID}, requestID: "release-" + v.JobID}, &l)
	}
	var placed lien.LienResult
	s.ok(exchange{key: s.keys["sched"], method: "POST", target: api.PathLiens, body: spec, requestID: "owner-2"}, &placed)
}
