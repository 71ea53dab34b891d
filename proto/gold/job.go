package gold

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
)

// Object Job: reservations (ingot's liens), charges, quotes and refunds.

// jobFields are what a job's record may hold: who runs it where, and what
// it asks for (WallDuration: the limit), as ingot prices it. Memory and
// Disk are in MB, the job's total; Queue is the partition.
var jobFields = []string{"JobId", "UserId", "ProjectId", "MachineName", "Processors", "Nodes", "GPUs", "Memory", "Disk",
	"QualityOfService", "Queue", "NodeType", "WallDuration", "StartTime", "Description"}

// jobRequest is what a job asks for: the basis of a lien or a quote.
func (c *call) jobRequest() (charge.Request, error) {
	res, err := c.resources()
	if err != nil {
		return charge.Request{}, err
	}
	limit, err := c.count("WallDuration")
	if err != nil {
		return charge.Request{}, err
	}
	start, err := c.when("StartTime")
	return charge.Request{Resources: res, WallclockLimitSeconds: limit, Start: start}, err
}

// resources are the job's resources, as the rate table's properties.
func (c *call) resources() (charge.Resources, error) {
	var r charge.Resources
	var err error
	for name, n := range map[string]*int64{"Processors": &r.Processors, "Nodes": &r.Nodes, "GPUs": &r.GPUs, "Memory": &r.MemoryMB, "Disk": &r.DiskMB} {
		if *n, err = c.count(name); err != nil {
			return r, err
		}
	}
	for name, s := range map[string]*string{"QualityOfService": &r.QOS, "Queue": &r.Partition, "NodeType": &r.NodeType} {
		if *s, err = c.text(name); err != nil {
			return r, err
		}
	}
	return r, nil
}

// who is the job's user and project (empty: the user's default project).
func (c *call) who() (user, project string, err error) {
	if user, err = c.need("UserId"); err != nil {
		return "", "", err
	}
	project, err = c.text("ProjectId")
	return user, project, err
}

// reserve places a job's lien (Gold's reservation); Replace=True re-prices
// the job's active lien. It is made without a request id: placing a lien
// is already once per job (asked again while the job's lien is active, it
// answers with that lien), and an id from the request's bytes would keep
// a requeued job, whose request is the same, from a new lien.
func reserve(c *call) (Response, error) {
	if err := c.checkNames(slices.Concat(jobFields, []string{"Replace"})...); err != nil {
		return Response{}, err
	}
	spec, err := c.placeSpec()
	if err != nil {
		return Response{}, err
	}
	if spec.ID == "" {
		return Response{}, Errorf(CodeBadData, "Job Reserve needs JobId")
	}
	if spec.Request.WallclockLimitSeconds == 0 {
		return Response{}, Errorf(CodeBadData, "Job Reserve needs WallDuration, the job's wallclock limit in seconds")
	}
	if spec.Replace, err = c.flag("Replace"); err != nil {
		return Response{}, err
	}
	r, err := callAPI[lien.LienResult](c, ledger.Request{Actor: c.actor}, http.MethodPost, api.PathLiens, spec)
	if err != nil {
		return Response{}, refused(err, "Insufficient balance to reserve job (JobId %s)", spec.ID)
	}
	msg := fmt.Sprintf("Successfully reserved %s credits for job %s", r.Lien.Amount, spec.ID)
	if r.Existing {
		msg = fmt.Sprintf("Job %s already has reservation %d of %s credits", spec.ID, r.Lien.ID, r.Lien.Amount)
	}
	return Response{Code: CodeSuccess, Message: msg + fellBack(r.Project, r.FellBack, r.Requested), Count: r.Lien.Amount.String(),
		Data: []Element{record("Job", field("Id", spec.ID), field("ProjectId", r.Project),
			record("Reservation", field("Id", idText(r.Lien.ID)), field("Amount", r.Lien.Amount.String()), field("EndTime", epoch(r.Lien.Expires))))}}, nil
}

// placeSpec is the lien a Reserve or Quote asks for.
func (c *call) placeSpec() (api.LienRequest, error) {
	var spec api.LienRequest
	var err error
	if spec.ID, err = c.text("JobId"); err != nil {
		return spec, err
	}
	if spec.Machine, err = c.machine(); err != nil {
		return spec, err
	}
	if spec.User, spec.Project, err = c.who(); err != nil {
		return spec, err
	}
	spec.Request, err = c.jobRequest()
	return spec, err
}

// fellBack says that a fallback account took the job, so that whoever
// reads the message can move the job to it (ProjectId in the data).
func fellBack(project string, fell bool, requested string) string {
	if !fell {
		return ""
	}
	return fmt.Sprintf(" on project %s, the fallback of %s", project, requested)
}

// refused is err, or for a lack of funds a 782 whose message begins as
// Gold's does and goes on with ingot's reason (who needed how much, what
// was available).
func refused(err error, format string, args ...any) error {
	if !errors.Is(err, ledger.ErrInsufficientFunds) {
		return err
	}
	return Errorf(CodeFunds, "%s: %v", fmt.Sprintf(format, args...), err)
}

// chargeFields are a job's fields as charged: WallDuration is the time
// used, CPUTime the CPU seconds, Type is Job, or Reservation for a
// chargeable reservation's idle time, and QuoteId a guaranteed quote a
// job without a reservation is charged at (as gcharge -q).
var chargeFields = slices.Concat(jobFields, []string{"EndTime", "CPUTime", "Type", "Incremental", "QuoteId"})

// chargeJob charges a job: finally (its lien settled, what is left of it
// released), or Incremental=True (the lien stays and shrinks). It never
// fails for lack of funds; an overdraft or a lien overrun is a Warning.
// Gold reports no exit state: the job is charged as completed.
func chargeJob(c *call) (Response, error) {
	if err := c.checkNames(chargeFields...); err != nil {
		return Response{}, err
	}
	spec, err := c.chargeSpec()
	if err != nil {
		return Response{}, err
	}
	r, err := change[lien.ChargeResult](c, api.PathCharges, spec)
	if err != nil {
		return Response{}, err
	}
	resp := Response{Code: CodeSuccess, Message: fmt.Sprintf("Successfully charged %s credits for job %s", r.Charge.Amount, spec.ID), Count: r.Charge.Amount.String(),
		Data: []Element{record("Job", field("Id", spec.ID), field("ProjectId", r.Charge.Project),
			record("Charge", field("Id", idText(r.Charge.ID)), field("Amount", r.Charge.Amount.String())))}}
	var notes []string
	if r.Charge.Overdrawn.IsPositive() {
		notes = append(notes, fmt.Sprintf("account %s was overdrawn by %s", r.Charge.Account, r.Charge.Overdrawn))
	}
	if r.Overran.IsPositive() {
		notes = append(notes, fmt.Sprintf("the charge overran the reservation by %s", r.Overran))
	}
	if len(notes) > 0 {
		resp.Warning, resp.Message = true, resp.Message+" ("+strings.Join(notes, "; ")+")"
	}
	return resp, nil
}

func (c *call) chargeSpec() (api.ChargeRequest, error) {
	var spec api.ChargeRequest
	var err error
	if spec.ID, err = c.need("JobId"); err != nil {
		return spec, err
	}
	if spec.Machine, err = c.machine(); err != nil {
		return spec, err
	}
	if spec.User, err = c.text("UserId"); err != nil {
		return spec, err
	}
	if spec.Project, err = c.text("ProjectId"); err != nil {
		return spec, err
	}
	if spec.Incremental, err = c.flag("Incremental"); err != nil {
		return spec, err
	}
	if spec.Quote, err = c.number("QuoteId"); err != nil {
		return spec, err
	}
	u := charge.Usage{State: charge.Completed}
	if u.Resources, err = c.resources(); err != nil {
		return spec, err
	}
	if u.WallclockSeconds, err = c.count("WallDuration"); err != nil {
		return spec, err
	}
	if u.CPUSeconds, err = c.count("CPUTime"); err != nil {
		return spec, err
	}
	if u.Start, err = c.when("StartTime"); err != nil {
		return spec, err
	}
	if u.End, err = c.when("EndTime"); err != nil {
		return spec, err
	}
	spec.Usage = u
	kind, err := c.text("Type")
	switch {
	case err != nil:
		return spec, err
	case strings.EqualFold(kind, "Reservation"):
		return reservationCharge(spec)
	case kind != "" && !strings.EqualFold(kind, "Job"):
		return spec, Errorf(CodeBadData, "Type %s: a charge is of a Job or of a Reservation's idle time", ledger.Excerpt(kind))
	}
	return spec, nil
}

// reservationCharge is the charge of a chargeable reservation's idle time
// as Maui sends it: the reservation's processors over the idle time it
// has worked out, to the reservation's user and project. It is a charge
// without a lien, each period a job of its own, named
// reservation/NAME/START-END so that each period is charged once.
func reservationCharge(spec api.ChargeRequest) (api.ChargeRequest, error) {
	u := spec.Usage
	if u.Start.IsZero() || u.End.IsZero() || spec.User == "" {
		return spec, Errorf(CodeBadData, "a Reservation's charge needs UserId, StartTime and EndTime")
	}
	if spec.Incremental {
		return spec, Errorf(CodeBadData, "a Reservation's charge is not Incremental: each period is charged once")
	}
	spec.ID = fmt.Sprintf("reservation/%s/%d-%d", spec.ID, u.Start.Unix(), u.End.Unix())
	return spec, nil
}

// quote prices a job. Without options it also says whether its lien
// would be granted now, and fails with 782 if not, as Gold's quote did;
// CostOnly=True prices only; Guarantee=True makes a guaranteed quote (its
// id in the data) that holds its prices until EndTime (default a day) for
// Uses jobs (default 1).
func quote(c *call) (Response, error) {
	if err := c.checkNames(slices.Concat(jobFields, []string{"CostOnly", "Guarantee", "EndTime", "Uses"})...); err != nil {
		return Response{}, err
	}
	costOnly, err := c.flag("CostOnly")
	if err != nil {
		return Response{}, err
	}
	guarantee, err := c.flag("Guarantee")
	if err != nil {
		return Response{}, err
	}
	if costOnly && guarantee {
		return Response{}, Errorf(CodeBadData, "CostOnly and Guarantee: a guaranteed quote is for a job the project can pay for")
	}
	p, err := c.placeSpec()
	if err != nil {
		return Response{}, err
	}
	spec := api.QuoteRequest{Machine: p.Machine, User: p.User, Project: p.Project, Request: p.Request}
	if guarantee {
		return c.guarantee(p.ID, spec)
	}
	q, err := read[lien.QuoteResult](c, http.MethodPost, api.PathQuotes, spec)
	if err != nil {
		return Response{}, err
	}
	if !costOnly && !q.Covered {
		return Response{}, Errorf(CodeFunds, "Insufficient balance to satisfy quotation (JobId %s): %s", p.ID, q.Refusal)
	}
	project, note := q.Project, ""
	if q.Fallback != "" {
		project, note = q.Fallback, fellBack(q.Fallback, true, q.Project)
	}
	return Response{Code: CodeSuccess, Message: fmt.Sprintf("Successfully quoted %s credits", q.Amount.Credits) + note, Count: q.Amount.Credits.String(),
		Data: []Element{record("Quote", field("Amount", q.Amount.Credits.String()), field("ProjectId", project), field("Available", q.Available.String()))}}, nil
}

// guaranteeFor is how long a guaranteed quote holds when EndTime is not
// given.
const guaranteeFor = 24 * time.Hour

func (c *call) guarantee(jobID string, spec api.QuoteRequest) (Response, error) {
	expires, err := c.when("EndTime")
	if err != nil {
		return Response{}, err
	}
	if expires.IsZero() {
		settings, err := read[api.Settings](c, http.MethodGet, api.PathSettings, api.NoQuery{})
		if err != nil {
			return Response{}, err
		}
		expires = settings.Now.Add(guaranteeFor).Truncate(time.Second)
	}
	uses, err := c.count("Uses")
	if err != nil {
		return Response{}, err
	}
	q, err := change[lien.StoredQuote](c, api.PathGuarantees, api.GuaranteeRequest{QuoteSpec: spec, Expires: expires, Uses: int(max(uses, 1))})
	if err != nil {
		return Response{}, refused(err, "Insufficient balance to guarantee a quotation (JobId %s)", jobID)
	}
	amount := q.Amount.Credits.String()
	return Response{Code: CodeSuccess, Message: fmt.Sprintf("Successfully quoted %s credits: guaranteed quote %d", amount, q.ID), Count: amount,
		Data: []Element{record("Quote", field("Id", idText(q.ID)), field("Amount", amount), field("ProjectId", q.Project),
			field("EndTime", epoch(q.Expires)), field("Uses", fmt.Sprint(q.Uses)))}}, nil
}

// refund returns credits of a job's charges (Amount, or all that is left
// of them), from its newest charge back.
func refund(c *call) (Response, error) {
	if err := c.checkNames("JobId", "MachineName", "Amount", "Description"); err != nil {
		return Response{}, err
	}
	var spec api.JobRefundRequest
	var err error
	if spec.ID, err = c.need("JobId"); err != nil {
		return Response{}, err
	}
	if spec.Machine, err = c.machine(); err != nil {
		return Response{}, err
	}
	if spec.Amount, err = c.amount("Amount", false); err != nil {
		return Response{}, err
	}
	if spec.Description, err = c.text("Description"); err != nil {
		return Response{}, err
	}
	r, err := change[lien.JobRefund](c, api.PathJobRefunds, spec)
	if err != nil {
		return Response{}, err
	}
	data := make([]Element, len(r.Charges))
	for i, ch := range r.Charges {
		data[i] = record("Charge", field("Id", idText(ch.ID)), field("JobId", ch.JobID), field("Amount", ch.Amount.String()), field("Refunded", ch.Refunded.String()))
	}
	return Response{Code: CodeSuccess, Message: fmt.Sprintf("Successfully refunded %s credits for job %s", r.Refunded, spec.ID), Count: r.Refunded.String(), Data: data}, nil
}
