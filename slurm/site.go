package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// Bank is what the submit verdicts and the settling of runs ask of the
// bank: operations that ingot's banks, local and remote, have.
type Bank interface {
	Nodes(ctx context.Context, prefix string) ([]ledger.Node, error)
	Quote(ctx context.Context, spec lien.QuoteSpec) (lien.QuoteResult, error)
	Charges(ctx context.Context, job lien.Job) ([]ledger.Charge, error)
	Charge(ctx context.Context, req ledger.Request, spec lien.ChargeSpec) (lien.ChargeResult, error)
	// Available is what a new lien on project may take now.
	Available(ctx context.Context, project string) (decimal.Decimal, error)
	Rates(ctx context.Context) (charge.RateTable, error)
}

// Site is a Slurm cluster and the bank it charges to: what the hooks and
// sync work with. The command line fills it in; the logic is here, and
// runs without a process per case.
type Site struct {
	Bank Bank
	// Run runs one of Slurm's commands and returns what it printed.
	Run func(ctx context.Context, name string, args ...string) (string, error)
	// Machine is the bank's machine; Cluster Slurm's name for it.
	Machine, Cluster string
	NodeFail         NodeFail
	// Request is the request of a change with id (the caller's actor).
	Request func(id string) ledger.Request
	// Refused reports whether err is the bank's answer about a job (it
	// cannot be covered, names what does not exist, is not valid) rather
	// than a failure to ask it; Message is err as a person reads it.
	Refused func(error) bool
	// NotFound reports whether err says the bank has no such thing (no
	// charge of a job).
	NotFound func(error) bool
	Message  func(error) string
	// Out is where what is changed is said, Log where warnings go.
	Out, Log io.Writer
}

// RequestID is the id of action on run number run of Slurm job id: the
// same whichever hook or sync makes it (a retry answers the first answer).
func (s *Site) RequestID(id string, run int64, action string) string {
	return fmt.Sprintf("slurm:%s:%s:%d:%s", s.Machine, id, run, action)
}

// Runs are the runs of the jobs `sacct -D -X` lists with args (-S TIME -E
// now, or -j IDS), numbered: a job whose earlier runs may be before -S
// (Incomplete) is asked again whole, by its id.
func (s *Site) Runs(ctx context.Context, args ...string) ([]Run, error) {
	query := func(args ...string) ([]AcctJob, error) {
		out, err := s.Run(ctx, "sacct", append([]string{"-X", "-D", "-P", "-a", "-M", s.Cluster, "-o", SacctFormat}, args...)...)
		if err != nil {
			return nil, err
		}
		return ParseSacct(out, time.Local)
	}
	records, err := query(args...)
	if err != nil {
		return nil, err
	}
	if len(args) > 1 && args[0] == "-S" {
		since, err := time.ParseInLocation("2006-01-02T15:04:05", args[1], time.Local)
		if err != nil {
			return nil, fmt.Errorf("slurm: -S %s: %w", args[1], err)
		}
		incomplete := Incomplete(records, since)
		for len(incomplete) > 0 {
			batch := incomplete[:min(len(incomplete), 200)]
			incomplete = incomplete[len(batch):]
			whole, err := query("-j", strings.Join(batch, ","))
			if err != nil {
				return nil, err
			}
			records = slices.DeleteFunc(records, func(r AcctJob) bool { return slices.Contains(batch, r.ID) })
			for _, r := range whole {
				if slices.Contains(batch, r.ID) {
					records = append(records, r)
				}
			}
		}
	}
	return NumberRuns(records), nil
}

// Settled is what SettleRun did with a run.
type Settled struct {
	Settlement Settlement
	State      charge.ExitState
	// Charge is the run's final charge, made now (Now) or before.
	Charge *ledger.Charge
	Now    bool
	// Problem is why an owed run could not be charged.
	Problem string
}

// SettleRun charges run r, unless it is charged already or owes nothing.
// A charge the bank refuses (an account it does not know, a user not in
// the project) is a Problem, not an error that stops the rest; with dry,
// it says what it would charge.
func (s *Site) SettleRun(ctx context.Context, r Run, dry bool) (Settled, error) {
	res := Settled{}
	res.Settlement, res.State = r.Settle(s.NodeFail)
	if res.Settlement != Owed {
		return res, nil
	}
	job := lien.Job{Machine: s.Machine, ID: r.BankJobID()}
	charges, err := s.Bank.Charges(ctx, job)
	if err != nil && !s.NotFound(err) {
		return res, err
	}
	if i := slices.IndexFunc(charges, func(ch ledger.Charge) bool { return ch.Final }); i >= 0 {
		res.Charge = &charges[i]
		return res, nil
	}
	project, err := Project(ctx, s.Bank, r.Account)
	if err != nil {
		res.Problem = BankWords(s.Message(err))
		return res, nil
	}
	spec := lien.ChargeSpec{Job: job, User: r.User, Project: project, Usage: charge.Usage{Resources: r.TRES.Resources(r.QOS, r.Partition),
		WallclockSeconds: r.Elapsed, WallclockLimitSeconds: r.TimeLimit, Start: r.Start, End: r.End, State: res.State}}
	if dry {
		to := project
		if to == "" {
			to = "the default project of " + r.User
		}
		fmt.Fprintf(s.Out, "would charge job %s run %d (%s, %d s) to %s\n", r.ID, r.Number, r.State, r.Elapsed, to)
		return res, nil
	}
	ch, err := s.Bank.Charge(ctx, s.Request(s.RequestID(r.ID, r.Number, "sync:charge")), spec)
	switch {
	case errors.Is(err, lien.ErrAlreadyCharged):
		return res, nil
	case err != nil && s.Refused(err):
		res.Problem = BankWords(s.Message(err))
		return res, nil
	case err != nil:
		return res, err
	}
	res.Charge, res.Now = &ch.Charge, true
	fmt.Fprintf(s.Out, "charged job %s run %d (%s, %d s): %s to %s\n", r.ID, r.Number, r.State, r.Elapsed, ch.Charge.Amount, ch.Charge.Project)
	return res, nil
}

// Project is the bank's project for a Slurm account ("" when the job
// names none: the bank then takes the user's default project); an account
// the bank has no node for is ledger.ErrNotFound.
func Project(ctx context.Context, b Bank, account string) (string, error) {
	if account == "" || account == "(null)" {
		return "", nil
	}
	nodes, err := b.Nodes(ctx, "")
	if err != nil {
		return "", err
	}
	project, err := NodeFor(account, nodeNames(nodes))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ledger.ErrNotFound, err)
	}
	return project, nil
}

func nodeNames(nodes []ledger.Node) []string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return names
}

// BankWords is a message without the package prefixes a user of Slurm has
// no use for ("ledger: insufficient funds: ").
func BankWords(msg string) string {
	for _, prefix := range []string{"ledger: ", "lien: ", "slurm: "} {
		msg = strings.ReplaceAll(msg, prefix, "")
	}
	return msg
}

// Report sums the runs sync looked at: Slurm's usage of those that ended
// (sacct -D's elapsed × allocated CPUs, and billing), against what the
// bank charged for them.
type Report struct {
	Runs, Charged, Nothing, Free, Unsettled int
	SlurmCPUSeconds, SlurmBilling           int64 // Slurm's usage of every run that ended
	ChargedCPUSeconds                       int64 // Slurm's usage of the runs the bank charged
	Credits                                 decimal.Decimal
}

// Add counts run r, settled as res.
func (p *Report) Add(r Run, res Settled) {
	if res.Settlement == NotEnded {
		return
	}
	p.Runs++
	p.SlurmCPUSeconds += r.Elapsed * r.TRES["cpu"]
	p.SlurmBilling += r.Elapsed * r.TRES["billing"]
	switch {
	case res.Settlement == Nothing:
		p.Nothing++
	case res.Settlement == Free:
		p.Free++
	case res.Charge != nil:
		p.Charged++
		p.ChargedCPUSeconds += r.Elapsed * r.TRES["cpu"]
		p.Credits = p.Credits.Add(res.Charge.Amount)
	default:
		p.Unsettled++
	}
}

// Print writes the report of the runs since since.
func (p *Report) Print(w io.Writer, since time.Time) {
	fmt.Fprintf(w, "report since %s: %d runs ended (sacct -D): %d charged, %d used nothing, %d free by policy, %d not settled\n",
		since.Local().Format(time.RFC3339), p.Runs, p.Charged, p.Nothing, p.Free, p.Unsettled)
	fmt.Fprintf(w, "Slurm's usage: %d CPU-seconds (%d billing-seconds); the bank charged runs of %d CPU-seconds, %s credits\n",
		p.SlurmCPUSeconds, p.SlurmBilling, p.ChargedCPUSeconds, p.Credits)
	verdict := "equal"
	if p.ChargedCPUSeconds != p.SlurmCPUSeconds {
		verdict = fmt.Sprintf("short by %d CPU-seconds (the runs free by policy or not settled)", p.SlurmCPUSeconds-p.ChargedCPUSeconds)
	}
	fmt.Fprintf(w, "charged against Slurm's usage: %s\n", verdict)
}

// WriteMetrics writes file in Prometheus' text format, for node_exporter's
// textfile collector (--collector.textfile.directory): the runs sync could
// not settle (-1 when sync itself failed), whether it finished, and when.
// It is written whole and renamed, so the collector never reads half.
func WriteMetrics(file, cluster string, unsettled int, ok bool, now time.Time) error {
	success := 0
	if ok {
		success = 1
	}
	text := fmt.Sprintf(`# HELP ingot_slurm_unsettled_jobs Runs of Slurm jobs that ingot slurm sync could not charge (-1: sync failed).
# TYPE ingot_slurm_unsettled_jobs gauge
ingot_slurm_unsettled_jobs{cluster=%[1]q} %[2]d
# HELP ingot_slurm_sync_success Whether the last ingot slurm sync finished (1) or failed (0).
# TYPE ingot_slurm_sync_success gauge
ingot_slurm_sync_success{cluster=%[1]q} %[3]d
# HELP ingot_slurm_sync_timestamp_seconds When the last ingot slurm sync ended.
# TYPE ingot_slurm_sync_timestamp_seconds gauge
ingot_slurm_sync_timestamp_seconds{cluster=%[1]q} %[4]d
`, cluster, unsettled, success, now.Unix())
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return fmt.Errorf("slurm sync: metrics file: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("slurm sync: metrics file: %w", err)
	}
	return nil
}
