package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
)

// An audit reads the whole journal, or all of it since the last clean
// one: on a large bank it takes longer than any request timeout. So it
// runs as a job of the server's, at most one of each kind (full or not)
// at a time: a request that asks while one runs waits for it and gets its
// report, so a client that retries a request it gave up on does not start
// another, and the job is not stopped when the client that asked goes
// away. Its progress goes to the log.
type audits struct {
	mu      sync.Mutex
	running map[bool]*auditJob // by Full
}

type auditJob struct {
	done chan struct{}
	rep  ledger.AuditReport
	err  error
}

// progressEvery is how often a running audit logs how far it is.
const progressEvery = 10 * time.Second

// run starts the audit asked for, or joins the one running, and waits for
// its report or for ctx to end.
func (s *Server) runAudit(ctx context.Context, full bool) (ledger.AuditReport, error) {
	s.audits.mu.Lock()
	job := s.audits.running[full]
	if job == nil {
		job = &auditJob{done: make(chan struct{})}
		if s.audits.running == nil {
			s.audits.running = map[bool]*auditJob{}
		}
		s.audits.running[full] = job
		go s.auditJob(job, full)
	}
	s.audits.mu.Unlock()
	select {
	case <-job.done:
		return job.rep, job.err
	case <-ctx.Done():
		return ledger.AuditReport{}, ctx.Err()
	}
}

func (s *Server) auditJob(job *auditJob, full bool) {
	start, last := time.Now(), time.Now()
	s.log.Info("audit started", "full", full)
	job.rep, job.err = s.ledger.Audit(context.Background(), ledger.AuditOptions{Full: full, Progress: func(entries uint64) {
		if time.Since(last) >= progressEvery {
			last = time.Now()
			s.log.Info("audit running", "full", full, "entries", entries, "seconds", int(time.Since(start).Seconds()))
		}
	}})
	s.log.Info("audit ended", "full", full, "entries", job.rep.Entries, "problems", len(job.rep.Problems), "seconds", time.Since(start).Seconds())
	s.audits.mu.Lock()
	delete(s.audits.running, full)
	s.audits.mu.Unlock()
	close(job.done)
}

// noDeadline lifts the server's answer timeout for this request: audits
// and backups take as long as the bank is large.
func noDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
}
