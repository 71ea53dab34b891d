package peer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/proto/peer/outbox"
)

// FuzzParsePeriod: a period's name is refused or read as a span of one
// day or one month that begins at a UTC midnight and is named as given.
func FuzzParsePeriod(f *testing.F) {
	for _, s := range []string{"2026-11-28", "2026-11", "2026-02-29", "0000-01", "9999-12-31", "", "2026-1-1", "2026-11-28Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := peer.ParsePeriod(s)
		if err != nil {
			return
		}
		if p.Name != s || p.From.Location() != time.UTC || !p.To.After(p.From) || p.From.Hour() != 0 {
			t.Fatalf("%q: %+v", s, p)
		}
		if days := p.To.Sub(p.From).Hours() / 24; days != 1 && (days < 28 || days > 31) {
			t.Fatalf("%q: %v days", s, days)
		}
	})
}

// FuzzBeganAt: any id gives a time, the one recorded unless it is a
// transaction id's.
func FuzzBeganAt(f *testing.F) {
	recorded := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for _, s := range []string{"tx-18bc7a3f0e5d2c00aabbccddeeff0011", "tx-", "tx-ffffffffffffffffffffffffffffffff", "job-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		got := peer.BeganAt(id, recorded)
		if !strings.HasPrefix(id, "tx-") && !got.Equal(recorded) {
			t.Fatalf("%q: %s", id, got)
		}
	})
}

// FuzzReceiveUsage: any body a peer sends as a usage report is refused,
// with nothing written but the refusal kept, the same when sent again, or
// recorded once as it was sent.
func FuzzReceiveUsage(f *testing.F) {
	f.Add([]byte(`{"period":"2026-11-28","from":"2026-11-28T00:00:00Z","to":"2026-11-29T00:00:00Z","lines":[]}`))
	f.Add([]byte(`{"period":"2026-11-28","from":"2026-11-28T00:00:00Z","to":"2026-11-29T00:00:00Z","lines":[{"account":"chem","allocation":1,"grant":"tx-1","charges":1,"charged":"5","refunded":"0","net":"5"}]}`))
	f.Add([]byte(`{"period":"2026-11","from":"2026-11-01T00:00:00Z","to":"2026-12-01T00:00:00Z"}`))
	fx := newFixture(f)
	length := fx.length
	n := 0
	f.Fuzz(func(t *testing.T, body []byte) {
		var u peer.UsageReport
		if json.Unmarshal(body, &u) != nil {
			return
		}
		n++
		before := length(t)
		req := ledger.Request{Actor: "client:siteb", ID: fmt.Sprintf("tx-fuzz-%d", n)}
		got, err := peer.ReceiveUsage(context.Background(), fx.Ledger, req, "siteb", body, outbox.Refusals{}, u)
		if err != nil {
			after := length(t)
			if after > before+1 {
				t.Fatalf("refused (%v), yet journaled more than its refusal", err)
			}
			_, again := peer.ReceiveUsage(context.Background(), fx.Ledger, req, "siteb", body, outbox.Refusals{}, u)
			if again == nil || api.FromError(again).Message != api.FromError(err).Message || length(t) != after {
				t.Fatalf("refused (%v), sent again: %v", err, again)
			}
			return
		}
		if got.Period != u.Period || len(got.Lines) != 0 || length(t) == before {
			t.Fatalf("recorded %+v of %s", got, body)
		}
	})
}

// length is the number of entries in the fixture's journal.
func (fx *fixture) length(t *testing.T) uint64 {
	n, err := fx.JournalLength(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// FuzzJobOp: a forwarded job's body is refused or read as one whose
// job, at the home bank, is on the sending peer's machine, its amount not
// below 0.
func FuzzJobOp(f *testing.F) {
	for _, s := range []string{`{"project":"chem.lab","machine":"hpc1","job_id":"42","amount":"1.5","expires":"2026-11-28T10:00:00Z"}`,
		`{"project":"chem.lab","machine":"sitec:hpc1","job_id":"1","amount":"1"}`, `{"amount":"-1"}`, `{}`, `[]`,
		`{"project":"chem.lab","machine":"hpc1","job_id":"42","amount":"0","description":"node failure"}`,
		`{"project":"chem.lab","machine":"hpc1","job_id":"42","amount":"1","expires":"2026-11-28T10:00:00Z","withdraws":[{"id":"tx-1","digest":"ab"}]}`,
		`{"project":"chem.lab","machine":"hpc1","job_id":"42","amount":"1","withdraws":[{}]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var j peer.JobOp
		if json.Unmarshal([]byte(s), &j) != nil {
			return
		}
		for _, op := range []peer.Op{peer.OpLien, peer.OpCharge, peer.OpRelease, peer.OpRefund} {
			if j.Check(op) != nil {
				continue
			}
			if ref := j.JobRef("siteb"); !strings.HasPrefix(ref.Machine, "siteb:") || strings.Count(ref.Machine, ":") != 1 || j.Amount.IsNegative() {
				t.Fatalf("%s %q: %+v", op, s, ref)
			}
			if op != peer.OpLien && len(j.Withdraws) > 0 {
				t.Fatalf("%s %q: withdrawals accepted on a %s", op, s, op)
			}
			for i, wd := range j.Withdrawals() {
				if wd.ID != j.Withdraws[i].ID || wd.Lien.JobID != j.JobID || wd.Lien.Machine != j.Machine || len(wd.Lien.Withdraws) != 0 {
					t.Fatalf("%s %q: withdrawal %d: %+v", op, s, i, wd)
				}
			}
		}
	})
}

// FuzzReceiveWithdrawal: any body a peer sends as a withdrawal is
// refused, with nothing written but the refusal kept, the same when sent
// again; or the lien it names, never received here, is recorded
// withdrawn, nothing released, and the withdrawal sent again gets the
// first answer.
func FuzzReceiveWithdrawal(f *testing.F) {
	digest := strings.Repeat("ab", 32)
	f.Add([]byte(`{"id":"tx-18bc7a3f0e5d2c00aabbccddeeff0011","digest":"` + digest + `","lien":{"project":"chem.lab","machine":"hpc1","job_id":"42","amount":"1.5","expires":"2026-11-28T10:00:00Z"}}`))
	f.Add([]byte(`{"id":"","digest":"` + digest + `","lien":{}}`))
	f.Add([]byte(`{"id":"tx-1","digest":"zz","lien":{"project":"chem.lab","machine":"hpc1","job_id":"42","amount":"1","expires":"2026-11-28T10:00:00Z"}}`))
	fx := newFixture(f)
	ctx := context.Background()
	length := fx.length
	n := 0
	f.Fuzz(func(t *testing.T, body []byte) {
		var wd peer.Withdrawal
		if json.Unmarshal(body, &wd) != nil {
			return
		}
		n++
		req := ledger.Request{Actor: "client:siteb", ID: fmt.Sprintf("tx-fuzzw-%d", n)}
		receive := func() error {
			_, err := peer.Receive(ctx, fx.Ledger, req, "siteb", peer.OpWithdraw, body, outbox.Refusals{}, func(w *ledger.Writer) (peer.Withdrawal, decimal.Decimal, error) {
				return wd, decimal.Zero, peer.Withdrawn(w, "siteb", wd, outbox.Refusals{}, func(time.Time) error {
					t.Fatalf("%s: released a lien never applied", body)
					return nil
				})
			})
			return err
		}
		before := length(t)
		err := receive()
		after := length(t)
		if err != nil {
			if after > before+1 {
				t.Fatalf("refused (%v), yet journaled more than its refusal", err)
			}
			if again := receive(); again == nil || api.FromError(again).Message != api.FromError(err).Message || length(t) != after {
				t.Fatalf("refused (%v), sent again: %v", err, again)
			}
			return
		}
		if again := receive(); again != nil || length(t) != after {
			t.Fatalf("applied, sent again: %v", again)
		}
		xs, err := fx.peers.Exchanged(ctx, "siteb", time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range xs {
			if x.ID == wd.ID && x.State == peer.StateWithdrawn && x.Op == peer.OpLien && x.Digest == wd.Digest {
				return
			}
		}
		t.Fatalf("%s applied; its lien not recorded withdrawn: %+v", body, xs)
	})
}
