package outbox_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/proto/peer/link"
	"github.com/ingot-hpc/ingot/proto/peer/outbox"
	"github.com/ingot-hpc/ingot/proto/server"
)

// laterApplies is a site whose first answer to a transaction is a
// refusal (the account is inactive), after which the
// account is reactivated; a second sending of the same
// transaction, if one comes, is held until the sender has recorded the
// first answer, then answered.
type laterApplies struct {
	t        *testing.T
	h        http.Handler
	site     *bank
	settled  func() bool
	requests atomic.Int32
	first    chan struct{}
}

func (s *laterApplies) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.requests.Add(1) == 1 {
		rec := httptest.NewRecorder()
		s.h.ServeHTTP(rec, r)
		if _, err := s.site.ReactivateNode(r.Context(), s.site.Req(), "chem"); err != nil {
			s.t.Error(err)
		}
		close(s.first)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return
	}
	for deadline := time.Now().Add(5 * time.Second); !s.settled() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	s.h.ServeHTTP(w, r)
}

// TestSentTwiceAtOnce: a transaction sent twice at once, as a forwarded
// operation and the outbox both send one still pending, whose first
// sending is refused (the account inactive) and whose second
// would be applied: recorded refused here, applied there, before the
// sendings of one transaction were made one at a time. Now the second
// finds the first's answer recorded and sends nothing: both banks say the
// same.
func TestSentTwiceAtOnce(t *testing.T) {
	ctx := context.Background()
	site := newBank(t, onFile, "chem")
	if _, err := site.DeactivateNode(ctx, site.Req(), "chem"); err != nil {
		t.Fatal(err)
	}
	central := newBank(t, onFile)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var tx peer.Transaction
	wrap := &laterApplies{t: t, h: server.New(site.Ledger, lien.New(site.Ledger), site.clients, &auth.Verifier{Lookup: server.KeyLookup(site.clients)}, log),
		site: site, first: make(chan struct{}), settled: func() bool {
			x, err := central.peers.Transaction(ctx, tx.ID)
			return err == nil && x.State != peer.StatePending
		}}
	ts := httptest.NewServer(wrap)
	defer ts.Close()
	_, centralKey, err := site.peers.Add(ctx, site.Req(), peer.Spec{Name: "central", URL: "http://127.0.0.1:1", Projects: []string{"chem"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := central.peers.Add(ctx, central.Req(), peer.Spec{Name: "site", URL: ts.URL}, &centralKey); err != nil {
		t.Fatal(err)
	}
	if tx, err = central.peers.Deposit(ctx, central.Req(), "site", ledger.DepositSpec{Account: "chem", Amount: ledgertest.Dec(t, "100")}); err != nil {
		t.Fatal(err)
	}
	send := func() {
		c, err := link.Open(ctx, central.peers, "site")
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := outbox.Send(ctx, central.peers, c, tx, 0); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(send)
	<-wrap.first
	wg.Go(send)
	wg.Wait()

	x, err := central.peers.Transaction(ctx, tx.ID)
	if err != nil {
		t.Fatal(err)
	}
	applied := site.MustBalance("chem").Amount
	if x.State == peer.StateRefused && !applied.IsZero() {
		t.Fatalf("the deposit is refused at the central bank and applied at the site (chem holds %s)", applied)
	}
	if x.State == peer.StateDone && !applied.Equal(ledgertest.Dec(t, "100")) {
		t.Fatalf("the deposit is done at the central bank, chem holds %s at the site", applied)
	}
}
