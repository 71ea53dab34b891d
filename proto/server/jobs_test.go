package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/ledger/boltstore/bolttest"
	"github.com/ingot-hpc/ingot/ledger/ledgertest"
)

// TestAuditJobsAreJoined: a request for an audit while one of the same
// kind runs waits for that one and gets its report (a client's retry
// starts no second audit); one whose client goes away stops waiting, and
// the audit goes on for the others.
func TestAuditJobsAreJoined(t *testing.T) {
	b := ledgertest.NewBank(t, bolttest.Open)
	var log bytes.Buffer
	s := &Server{ledger: b.Ledger, log: slog.New(slog.NewJSONHandler(&log, nil))}
	running := &auditJob{done: make(chan struct{})}
	s.audits.running = map[bool]*auditJob{true: running}

	got := make(chan ledger.AuditReport)
	go func() {
		rep, _ := s.runAudit(context.Background(), true)
		got <- rep
	}()
	gone, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error)
	go func() {
		_, err := s.runAudit(gone, true)
		cancelled <- err
	}()
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("a request whose client went away: %v", err)
	}
	select {
	case rep := <-got:
		t.Fatalf("a request did not wait for the running audit: %+v", rep)
	case <-time.After(50 * time.Millisecond):
	}
	running.rep = ledger.AuditReport{Entries: 42, Full: true}
	close(running.done)
	if rep := <-got; rep.Entries != 42 {
		t.Errorf("the waiting request got %+v, not the running audit's report", rep)
	}
	if strings.Contains(log.String(), "audit started") {
		t.Errorf("a second audit started beside the running one:\n%s", log.String())
	}

	// With none running, one starts, and ends.
	delete(s.audits.running, true)
	rep, err := s.runAudit(context.Background(), false)
	if err != nil || len(rep.Problems) > 0 || !strings.Contains(log.String(), "audit started") || len(s.audits.running) != 0 {
		t.Errorf("an audit of its own: %+v %v, running %v\n%s", rep, err, s.audits.running, log.String())
	}
}
