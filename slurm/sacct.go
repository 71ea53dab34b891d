package slurm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
)

// SacctFormat is the -o list that ParseSacct reads: `sacct -X -P -o
// SacctFormat`. Exit codes come from this text, not from 22.05's --json,
// which reports 0 for jobs that exited non-zero. JobIDRaw is the job's own
// number, which the hooks know it by ($SLURM_JOB_ID): a task of a job
// array has one, where JobID prints ARRAYID_TASK. DBIndex and Submit tell
// the runs of a requeued job apart (`sacct -D` lists each run).
const SacctFormat = "JobIDRaw,Cluster,Account,User,Partition,QOS,AllocTRES,ElapsedRaw,TimelimitRaw,Start,End,State,ExitCode,DBIndex,Submit"

// SacctHeader is the header line sacct prints for SacctFormat.
func SacctHeader() string { return strings.ReplaceAll(SacctFormat, ",", "|") }

// AcctJob is one allocation (-X) as sacct reports it.
type AcctJob struct {
	ID        string
	Cluster   string
	Account   string
	User      string
	Partition string
	QOS       string
	TRES      TRES
	Elapsed   int64 // seconds
	// TimeLimit is in seconds; 0 when the job has none (UNLIMITED).
	TimeLimit int64
	Start     time.Time // zero when the job never started
	End       time.Time // zero while it runs
	// State is Slurm's state alone: "CANCELLED by 0" reads CANCELLED.
	State    string
	ExitCode string // "status:signal"
	// DBIndex is the record's number in Slurm's database: each run of a
	// requeued job is a record of its own, numbered in the order of the
	// runs.
	DBIndex int64
	// Submit is when the run was submitted: the job's submission for its
	// first run, the requeue for a later one.
	Submit time.Time
}

// ParseSacct reads the output of `sacct -X -P -o SacctFormat` (with its
// header line), its times in loc.
func ParseSacct(out string, loc *time.Location) ([]AcctJob, error) {
	rows, err := parseTable(out, strings.Split(SacctFormat, ","))
	if err != nil {
		return nil, fmt.Errorf("slurm: sacct: %w", err)
	}
	jobs := make([]AcctJob, 0, len(rows))
	for i, r := range rows {
		j, err := acctJob(r, loc)
		if err != nil {
			return nil, fmt.Errorf("slurm: sacct line %d (job %s): %w", i+2, ledger.Excerpt(r["JobIDRaw"]), err)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

func acctJob(r map[string]string, loc *time.Location) (AcctJob, error) {
	j := AcctJob{ID: r["JobIDRaw"], Cluster: r["Cluster"], Account: r["Account"], User: r["User"], Partition: r["Partition"],
		QOS: r["QOS"], ExitCode: r["ExitCode"]}
	if words := strings.Fields(r["State"]); len(words) > 0 {
		j.State = words[0]
	}
	if j.ID == "" || j.State == "" {
		return j, fmt.Errorf("no job id or state")
	}
	var err error
	if j.TRES, err = ParseTRES(r["AllocTRES"]); err != nil {
		return j, err
	}
	if j.Elapsed, err = count("ElapsedRaw", r["ElapsedRaw"]); err != nil {
		return j, err
	}
	if limit := r["TimelimitRaw"]; limit != "UNLIMITED" && limit != "Partition_Limit" {
		minutes, err := count("TimelimitRaw", limit)
		if err != nil {
			return j, err
		}
		j.TimeLimit = minutes * 60
	}
	if j.Start, err = localTime("Start", r["Start"], loc); err != nil {
		return j, err
	}
	if j.End, err = localTime("End", r["End"], loc); err != nil {
		return j, err
	}
	if j.DBIndex, err = count("DBIndex", r["DBIndex"]); err != nil {
		return j, err
	}
	if j.Submit, err = localTime("Submit", r["Submit"], loc); err != nil {
		return j, err
	}
	return j, nil
}

// parseTable reads '|'-separated lines under a header that names at least
// the columns wanted; each row maps a column's name to its field.
func parseTable(out string, want []string) ([]map[string]string, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return nil, fmt.Errorf("no header line")
	}
	header := strings.Split(lines[0], "|")
	for _, w := range want {
		if !slices.Contains(header, w) {
			return nil, fmt.Errorf("the header %s has no column %s", ledger.Excerpt(lines[0]), w)
		}
	}
	var rows []map[string]string
	for i, line := range lines[1:] {
		fields := strings.Split(line, "|")
		if len(fields) != len(header) {
			return nil, fmt.Errorf("line %d has %d fields, the header %d", i+2, len(fields), len(header))
		}
		row := make(map[string]string, len(header))
		for k, name := range header {
			row[name] = fields[k]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// count reads a whole number of at least 0.
func count(field, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %s is not a whole number of at least 0", field, ledger.Excerpt(s))
	}
	return n, nil
}

// localTime reads Slurm's 2006-01-02T15:04:05 in loc; unset is zero.
func localTime(field, s string, loc *time.Location) (time.Time, error) {
	if isUnset(s) {
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", s, loc)
	if err != nil {
		return t, fmt.Errorf("%s %s is not a time as Slurm writes it (2006-01-02T15:04:05)", field, ledger.Excerpt(s))
	}
	return t, nil
}
