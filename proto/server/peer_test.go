package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// TestPeerActsOnNothingElse: the key of a peer bank, whatever projects its
// agreement names, is refused by every endpoint but the exchange's
// (/v1/exchange/..., tested with the outbox).
func TestPeerActsOnNothingElse(t *testing.T) {
	s := newSite(t)
	_, key, err := peer.New(s.Ledger, s.reg).Add(t.Context(), s.Req(), peer.Spec{Name: "siteb", URL: "https://siteb.example", Projects: []string{"chem.lab1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := s.JournalLen()
	for i, rt := range s.srv.Routes() {
		if rt[1] == api.PathHealth || strings.HasPrefix(rt[1], "/v1/exchange/") {
			continue
		}
		w := s.do(exchange{key: key, method: rt[0], target: rt[1], body: []byte(`{}`), requestID: fmt.Sprintf("peer-%d", i)})
		if w.Code != http.StatusForbidden {
			t.Errorf("%s %s: a peer got %d, want 403: %s", rt[0], rt[1], w.Code, w.Body)
		}
	}
	if s.JournalLen() != before {
		t.Error("a peer's refused requests changed the bank")
	}
}

// TestPeerReadsOnlyItsOwnTransactions: a peer asking for the exchange's
// transactions is answered with those between it and this bank, and may
// not name another peer.
func TestPeerReadsOnlyItsOwnTransactions(t *testing.T) {
	s := newSite(t)
	_, key, err := peer.New(s.Ledger, s.reg).Add(t.Context(), s.Req(), peer.Spec{Name: "siteb", URL: "https://siteb.example"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := s.do(exchange{key: key, method: "GET", target: api.PathExchangeTxs + "?peer=central"})
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `unknown query parameter \"peer\"`) {
		t.Errorf("a peer naming another: %d %s", w.Code, w.Body)
	}
	w = s.do(exchange{key: key, method: "GET", target: api.PathExchangeTxs})
	if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != `{"items":[]}` {
		t.Errorf("a peer's own: %d %s", w.Code, w.Body)
	}
}
