package client_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/client"
)

// TestBatchLostAnswer: a batch's answer is lost; the client sends it again
// and gets the first answers, and nothing is applied twice.
func TestBatchLostAnswer(t *testing.T) {
	f := newFixture(t)
	transport := &loseFirst{path: api.PathBatch}
	c := f.client(t, f.sched, client.WithHTTPClient(&http.Client{Transport: transport}))
	req := charge.Request{Resources: charge.Resources{Processors: 1}, WallclockLimitSeconds: 100}
	usage := charge.Usage{Resources: charge.Resources{Processors: 1}, WallclockSeconds: 60, State: charge.Completed}
	job := lien.Job{Machine: "hpc1", ID: "b1"}
	results, err := c.Batch(context.Background(), "", []api.BatchItem{
		{Lien: &api.LienRequest{Job: job, User: "amy", Request: req}},
		{Charge: &api.ChargeRequest{Job: job, Usage: usage}},
		{Release: &api.ReleaseRequest{Machine: "hpc2", ID: "b2"}},
	})
	if err != nil {
		t.Fatalf("batch after a lost answer: %v", err)
	}
	if transport.sent.Load() != 2 {
		t.Errorf("batch sent %d times, want 2", transport.sent.Load())
	}
	if err := results[0].Err(); err != nil || results[0].Lien.Existing {
		t.Errorf("item 0: %+v %v", results[0].Lien, err)
	}
	if err := results[1].Err(); err != nil || !results[1].Charge.Charge.Amount.Equal(decimal.NewFromInt(60)) {
		t.Errorf("item 1: %+v %v", results[1].Charge, err)
	}
	if !client.IsCode(results[2].Err(), api.CodeForbidden) {
		t.Errorf("item 2 on another machine: %v", results[2].Err())
	}
	if amount := f.MustBalance("chem").Amount; !amount.Equal(decimal.NewFromInt(940)) {
		t.Errorf("chem holds %s after one charge of 60, want 940", amount)
	}
}
