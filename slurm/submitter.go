package slurm

import (
	"context"
	"fmt"
	"os/user"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// SubmissionField is a field of job_desc that job_submit.lua passes on: as
// the flag --Name of `ingot slurm submit`, or as Name=VALUE on a line to
// `ingot slurm submit-server`.
type SubmissionField struct {
	Name, Lua string
	Field     func(*Submission) *string
}

// SubmissionFields are the fields job_submit.lua passes on.
var SubmissionFields = []SubmissionField{
	{"account", "account (or default_account)", func(s *Submission) *string { return &s.Account }},
	{"partition", "partition", func(s *Submission) *string { return &s.Partition }},
	{"qos", "qos", func(s *Submission) *string { return &s.QOS }},
	{"time-limit", "time_limit (minutes)", func(s *Submission) *string { return &s.TimeLimit }},
	{"partition-default-time", "the partition's default_time (minutes)", func(s *Submission) *string { return &s.PartitionDefaultTime }},
	{"partition-max-time", "the partition's max_time (minutes)", func(s *Submission) *string { return &s.PartitionMaxTime }},
	{"min-cpus", "min_cpus", func(s *Submission) *string { return &s.MinCPUs }},
	{"num-tasks", "num_tasks", func(s *Submission) *string { return &s.NumTasks }},
	{"cpus-per-task", "cpus_per_task", func(s *Submission) *string { return &s.CPUsPerTask }},
	{"min-nodes", "min_nodes", func(s *Submission) *string { return &s.MinNodes }},
	{"min-memory", "pn_min_memory", func(s *Submission) *string { return &s.MinMemory }},
	{"tres-per-node", "tres_per_node", func(s *Submission) *string { return &s.TRESPerNode }},
	{"tres-per-job", "tres_per_job", func(s *Submission) *string { return &s.TRESPerJob }},
	{"tres-per-task", "tres_per_task", func(s *Submission) *string { return &s.TRESPerTask }},
}

// Submitter gives job_submit.lua's verdicts on jobs: one line, "accept",
// "account NAME" (move the job to the fallback's Slurm account), "refuse
// MESSAGE" or "error MESSAGE" (the bank could not be asked). It keeps the
// bank's node names and the users' names for NamesFor (a name not among
// them is asked again at once), so that a verdict costs one quote.
type Submitter struct {
	Bank    Bank
	Machine string
	// Refused and Message are as Site's.
	Refused func(error) bool
	Message func(error) string

	mu      sync.Mutex
	names   []string
	fetched time.Time
	users   map[string]cachedUser // by uid
}

type cachedUser struct {
	name    string
	fetched time.Time
}

// NamesFor is how long a Submitter keeps the bank's node names and the
// users' names.
const NamesFor = time.Minute

// Verdict is the line for the job of userName described by s.
func (sb *Submitter) Verdict(ctx context.Context, s Submission, userName string) string {
	req, err := s.Request()
	if err != nil {
		return "refuse " + BankWords(err.Error())
	}
	req.Start = time.Now()
	verdict, err := sb.quote(ctx, s.Account, userName, req)
	if err != nil {
		if sb.Refused(err) {
			return "refuse " + BankWords(sb.Message(err))
		}
		return "error " + sb.Message(err)
	}
	return verdict
}

// LineVerdict is the verdict on one line of submit-server's protocol:
// NAME=VALUE fields separated by tabs, uid or user, and SubmissionFields.
func (sb *Submitter) LineVerdict(ctx context.Context, line string) string {
	s, uid, userName, err := ParseSubmitLine(line)
	if err != nil {
		return "error " + err.Error()
	}
	if userName == "" {
		if userName, err = sb.user(uid); err != nil {
			return "error " + err.Error()
		}
	}
	return sb.Verdict(ctx, s, userName)
}

func (sb *Submitter) quote(ctx context.Context, account, userName string, req charge.Request) (string, error) {
	project, err := sb.project(ctx, account)
	if err != nil {
		return "", err
	}
	q, err := sb.Bank.Quote(ctx, lien.QuoteSpec{Machine: sb.Machine, User: userName, Project: project, Request: req})
	switch {
	case err != nil:
		return "", err
	case q.Fallback != "":
		return "account " + SlurmName(q.Fallback), nil
	case q.Covered:
		return "accept", nil
	}
	return "refuse " + BankWords(q.Refusal), nil
}

// project is the bank's project for a Slurm account, from the node names
// as they were at most NamesFor ago, or as they are now if the account is
// not among them.
func (sb *Submitter) project(ctx context.Context, account string) (string, error) {
	if account == "" || account == "(null)" {
		return "", nil
	}
	sb.mu.Lock()
	names, fresh := sb.names, time.Since(sb.fetched) < NamesFor
	sb.mu.Unlock()
	if fresh {
		if project, err := NodeFor(account, names); err == nil {
			return project, nil
		}
	}
	nodes, err := sb.Bank.Nodes(ctx, "")
	if err != nil {
		return "", err
	}
	names = nodeNames(nodes)
	sb.mu.Lock()
	sb.names, sb.fetched = names, time.Now()
	sb.mu.Unlock()
	project, err := NodeFor(account, names)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ledger.ErrNotFound, err)
	}
	return project, nil
}

// user is the name of uid, kept for NamesFor.
func (sb *Submitter) user(uid string) (string, error) {
	sb.mu.Lock()
	u, ok := sb.users[uid]
	sb.mu.Unlock()
	if ok && time.Since(u.fetched) < NamesFor {
		return u.name, nil
	}
	name, err := UserOf(uid)
	if err != nil {
		return "", err
	}
	sb.mu.Lock()
	if sb.users == nil {
		sb.users = map[string]cachedUser{}
	}
	sb.users[uid] = cachedUser{name: name, fetched: time.Now()}
	sb.mu.Unlock()
	return name, nil
}

// UserOf is the login name of uid.
func UserOf(uid string) (string, error) {
	u, err := user.LookupId(uid)
	if err != nil {
		return "", fmt.Errorf("slurm submit: uid %s: %w", uid, err)
	}
	return u.Username, nil
}

// ParseSubmitLine reads a line of submit-server's protocol.
func ParseSubmitLine(line string) (s Submission, uid, userName string, err error) {
	for _, f := range strings.Split(line, "\t") {
		if f == "" {
			continue
		}
		name, value, ok := strings.Cut(f, "=")
		if !ok {
			return s, "", "", fmt.Errorf("slurm submit-server: field %s is not NAME=VALUE", ledger.Excerpt(f))
		}
		switch name {
		case "uid":
			uid = value
			continue
		case "user":
			userName = value
			continue
		}
		i := slices.IndexFunc(SubmissionFields, func(sf SubmissionField) bool { return sf.Name == name })
		if i < 0 {
			return s, "", "", fmt.Errorf("slurm submit-server: unknown field %s (job_submit.lua of another ingot?)", ledger.Excerpt(name))
		}
		*SubmissionFields[i].Field(&s) = value
	}
	if uid == "" && userName == "" {
		return s, "", "", fmt.Errorf("slurm submit-server: the line names no uid or user")
	}
	return s, uid, userName, nil
}
