package server

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// Handlers of jobs: quotes, liens, charges, refunds and reservations. A
// scheduler acts only on its machines; reads are filtered by reach.job.

func (s *Server) quote(c *call, spec api.QuoteRequest) (lien.QuoteResult, error) {
	if err := requireSchedules(c.client, "quote on", spec.Machine); err != nil {
		return lien.QuoteResult{}, err
	}
	return s.bank.Quote(c.r.Context(), spec)
}

func (s *Server) guarantee(c *call, g api.GuaranteeRequest) (lien.StoredQuote, error) {
	if err := requireSchedules(c.client, "guarantee a quote on", g.Machine); err != nil {
		return lien.StoredQuote{}, err
	}
	return s.bank.Guarantee(c.r.Context(), c.req, g.QuoteSpec, g.Expires, g.Uses)
}

func (s *Server) quotes(c *call, _ api.NoQuery) (api.List[lien.StoredQuote], error) {
	return readable(c.r.Context(), s, c, s.bank.Quotes, func(r reach, q lien.StoredQuote) bool { return r.job(q.Project, q.Machine) })
}

func (s *Server) placeLien(c *call, spec api.LienRequest) (lien.LienResult, error) {
	if err := requireSchedules(c.client, "place a lien on", spec.Machine); err != nil {
		return lien.LienResult{}, err
	}
	r, err := s.bank.Place(c.r.Context(), c.req, spec)
	if h, ok := errors.AsType[*lien.HomedError](err); ok {
		return s.forwardLien(c, h)
	}
	return r, err
}

func (s *Server) extendLien(c *call, e api.ExtendRequest) (lien.LienResult, error) {
	if err := requireSchedules(c.client, "extend a lien on", e.Machine); err != nil {
		return lien.LienResult{}, err
	}
	return s.bank.Extend(c.r.Context(), c.req, e.Job, e.WallclockLimitSeconds)
}

func (s *Server) releaseLien(c *call, job api.ReleaseRequest) (ledger.Lien, error) {
	if err := requireSchedules(c.client, "release a lien on", job.Machine); err != nil {
		return ledger.Lien{}, err
	}
	l, err := s.bank.Release(c.r.Context(), c.req, job)
	if errors.Is(err, lien.ErrNoLien) || errors.Is(err, ledger.ErrRequestConflict) {
		// A job with no lien here may be homed; a retry of a forwarded
		// release finds its request id kept for the transaction it began
		// (peer.Registry.BeginOnce), which is other content than a
		// release's.
		return s.forwardRelease(c, job, err)
	}
	return l, err
}

func (s *Server) modifyLien(c *call, m api.LienModifyRequest) (ledger.Lien, error) {
	if err := requireSchedules(c.client, "move the end of a lien on", m.Machine); err != nil {
		return ledger.Lien{}, err
	}
	return s.bank.MoveEnd(c.r.Context(), c.req, m.Job, m.End)
}

func (s *Server) sweep(c *call, _ api.SweepRequest) (api.List[ledger.Lien], error) {
	liens, err := s.bank.Sweep(c.r.Context(), c.req)
	return api.ListOf(liens), err
}

// liens are the liens the client reads, of a node it reads when one is
// named.
func (s *Server) liens(c *call, q api.LiensQuery) (api.List[ledger.Lien], error) {
	if q.Node != "" {
		if err := s.requireReads(c.r.Context(), c.client, q.Node); err != nil {
			return api.List[ledger.Lien]{}, err
		}
	}
	return readable(c.r.Context(), s, c, func(ctx context.Context) ([]ledger.Lien, error) { return s.bank.Liens(c.r.Context(), q.Node, q.All) },
		func(r reach, l ledger.Lien) bool { return r.job(l.Project, l.Machine) })
}

func (s *Server) jobLien(c *call, q api.JobQuery) (ledger.Lien, error) {
	what := "the lien of job " + q.JobID
	if err := requireJobsOn(c.client, what, q.Machine); err != nil {
		return ledger.Lien{}, err
	}
	r, err := s.reachOf(c.r.Context(), c.client)
	if err != nil {
		return ledger.Lien{}, err
	}
	job := lien.Job{Machine: q.Machine, ID: q.JobID}
	l, err := s.bank.JobLien(c.r.Context(), job)
	if err == nil && !r.job(l.Project, l.Machine) {
		// The same answer as a job with no lien: a client that may not
		// read a job learns neither that it exists nor whose it is.
		return ledger.Lien{}, lien.NoLien(job)
	}
	return l, err
}

func (s *Server) charge(c *call, spec api.ChargeRequest) (lien.ChargeResult, error) {
	if err := requireSchedules(c.client, "charge a job on", spec.Machine); err != nil {
		return lien.ChargeResult{}, err
	}
	r, err := s.bank.Charge(c.r.Context(), c.req, spec)
	if h, ok := errors.AsType[*lien.HomedError](err); ok {
		return s.forwardCharge(c, h)
	}
	return r, err
}

// charges are a job's charges that the client reads.
func (s *Server) charges(c *call, q api.ChargesQuery) (api.List[ledger.Charge], error) {
	list := func(ctx context.Context) ([]ledger.Charge, error) {
		return s.bank.FindCharges(ctx, lien.ChargeFilter{Node: q.Node, User: q.User, Machine: q.Machine, Since: q.Since, Until: q.Until})
	}
	if q.JobID != "" {
		if q.Machine == "" {
			return api.List[ledger.Charge]{}, api.Errorf(api.CodeInvalid, "%s: job_id needs machine", api.PathCharges)
		}
		if err := requireJobsOn(c.client, "the charges of job "+q.JobID, q.Machine); err != nil {
			return api.List[ledger.Charge]{}, err
		}
		list = func(ctx context.Context) ([]ledger.Charge, error) {
			return s.bank.Charges(ctx, lien.Job{Machine: q.Machine, ID: q.JobID})
		}
	}
	return readable(c.r.Context(), s, c, list, func(r reach, ch ledger.Charge) bool { return r.job(ch.Project, ch.Machine) })
}

// usage reports the charges the client reads, summed as lien.Usage does.
func (s *Server) usage(c *call, q api.UsageQuery) (api.List[lien.UsageRow], error) {
	loc, err := time.LoadLocation(cmp.Or(q.TZ, "UTC"))
	if err != nil {
		return api.List[lien.UsageRow]{}, api.Errorf(api.CodeInvalid, "%s: tz %s: %v", api.PathUsage, ledger.Excerpt(q.TZ), err)
	}
	charges, err := readable(c.r.Context(), s, c, func(ctx context.Context) ([]ledger.Charge, error) {
		return s.bank.FindCharges(ctx, lien.ChargeFilter{Node: q.Node, User: q.User, Machine: q.Machine, Since: q.Since, Until: q.Until})
	}, func(r reach, ch ledger.Charge) bool { return r.job(ch.Project, ch.Machine) })
	if err != nil {
		return api.List[lien.UsageRow]{}, err
	}
	var by []string
	if q.By != "" {
		by = strings.Split(q.By, ",")
	}
	rows, err := lien.Usage(charges.Items, by, q.Period, loc)
	return api.ListOf(rows), err
}

func (s *Server) refund(c *call, spec api.RefundRequest) (ledger.Charge, error) {
	return s.bank.Refund(c.r.Context(), c.req, spec)
}

func (s *Server) refundJob(c *call, spec api.JobRefundRequest) (lien.JobRefund, error) {
	r, err := s.bank.RefundJob(c.r.Context(), c.req, spec)
	if errors.Is(err, ledger.ErrNotFound) || errors.Is(err, ledger.ErrRequestConflict) {
		// As a release: a job with no charges here may be homed.
		return s.forwardRefund(c, spec, err)
	}
	return r, err
}

func (s *Server) addReservation(c *call, spec api.ReservationRequest) (lien.Reservation, error) {
	if err := requireSchedules(c.client, "add a reservation on", spec.Machine); err != nil {
		return lien.Reservation{}, err
	}
	return s.bank.AddReservation(c.r.Context(), c.req, spec)
}

func (s *Server) reservations(c *call, _ api.NoQuery) (api.List[lien.Reservation], error) {
	return readable(c.r.Context(), s, c, s.bank.Reservations, func(r reach, res lien.Reservation) bool { return r.job(res.Project, res.Machine) })
}

// flush lets a scheduler flush the reservations of its machines; one that
// is unknown is left to the bank to refuse.
func (s *Server) flush(c *call, f api.FlushRequest) (lien.FlushResult, error) {
	if err := s.mayFlush(c, f.Name); err != nil {
		return lien.FlushResult{}, err
	}
	return s.bank.Flush(c.r.Context(), c.req, f.Name, f.RunningProcSeconds, f.End)
}

// flushDryRun answers what a flush would do now, to whoever may flush.
func (s *Server) flushDryRun(c *call, f api.FlushRequest) (lien.FlushResult, error) {
	if err := s.mayFlush(c, f.Name); err != nil {
		return lien.FlushResult{}, err
	}
	return s.bank.FlushDryRun(c.r.Context(), f.Name, f.RunningProcSeconds, f.End)
}

// mayFlush refuses a scheduler the reservations of other machines.
func (s *Server) mayFlush(c *call, name string) error {
	if c.client.Role == clients.RoleAdmin {
		return nil
	}
	rs, err := s.bank.Reservations(c.r.Context())
	if err != nil {
		return err
	}
	if i := slices.IndexFunc(rs, func(r lien.Reservation) bool { return r.Name == name }); i >= 0 {
		return requireSchedules(c.client, "flush a reservation on", rs[i].Machine)
	}
	return nil
}

// usagePeers are the usage reports peers sent of the allocations this
// bank granted them, with the lines of the accounts the client reads. An
// admin asking for every account gets every report, those of periods of
// no usage too: a period without a report is one not reported yet.
func (s *Server) usagePeers(c *call, q api.UsagePeersQuery) (api.List[peer.ReceivedUsage], error) {
	r, err := s.reachOf(c.r.Context(), c.client)
	if err != nil {
		return api.List[peer.ReceivedUsage]{}, err
	}
	reports, err := peer.Reported(c.r.Context(), s.ledger, "", q.Since, q.Until)
	if c.client.Role == clients.RoleAdmin && q.Node == "" {
		return api.ListOf(reports), err
	}
	// A scheduler reads the charges of its machines: a site reports none.
	return api.ListOf(peer.Keep(reports, func(l peer.UsageLine) bool {
		return c.client.Role != clients.RoleScheduler && r.node(l.Account) && (q.Node == "" || ledger.InSubtree(l.Account, q.Node))
	})), err
}
