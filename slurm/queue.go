package slurm

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
)

// queueFields are the squeue -O fields that ParseQueue reads. None is
// written by the job's user (its name, comment or command): `scontrol show
// job -o` puts those among the others unquoted, where a job named "x
// Account=other" forges a field; these cannot.
var queueFields = []string{"JobID", "UserName", "Account", "Partition", "QOS", "State", "TimeLimit", "StartTime", "EndTime", "TimeUsed",
	"NumCPUs", "NumNodes", "NumTasks", "tres-alloc", "tres-per-node", "tres-per-job", "tres-per-task", "Reservation",
	"RestartCnt", "Reason"}

// QueueFormat is the -O list for `squeue -h -t all -j ID -O QueueFormat`:
// each field at full width (no padding, no truncation), ended by '|'.
func QueueFormat() string {
	return strings.Join(queueFields, ":|,") + ":|"
}

// QueueJob is a job as the controller knows it, while it is queued or runs
// and for a while after it ends (MinJobAge).
type QueueJob struct {
	ID, User, Account, Partition, QOS string
	State                             string
	TimeLimit                         int64 // seconds; 0 for UNLIMITED
	Start, End                        time.Time
	Used                              int64 // seconds
	CPUs, Nodes, Tasks                int64
	TRES                              TRES  // allocated (requested while pending)
	GPUs                              int64 // from TRES, or from the GPU request
	Reservation                       string
	// Restarts is how many times the job was requeued: in the prolog,
	// the number of the run about to start; in the epilog of a run that
	// was requeued, already the next run's (and $SLURM_JOB_RESTART_COUNT
	// may still be the old one there: seen after a node failure).
	Restarts int64
	// Reason is why the job is not running, as the controller says:
	// NodeDown in the epilog of a run whose node failed.
	Reason string
}

// ParseQueueJobs reads the lines `squeue -h -O QueueFormat()` prints, one
// job a line.
func ParseQueueJobs(out string, loc *time.Location) ([]QueueJob, error) {
	var jobs []QueueJob
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		j, err := ParseQueue(line, loc)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// ParseQueue reads the one line `squeue -h -t all -j ID -O QueueFormat()`
// prints, its times in loc.
func ParseQueue(out string, loc *time.Location) (QueueJob, error) {
	line := strings.TrimSuffix(strings.TrimRight(out, "\n"), "|")
	fields := strings.Split(line, "|")
	if strings.Contains(line, "\n") || len(fields) != len(queueFields) {
		return QueueJob{}, fmt.Errorf("slurm: squeue printed %s, not one job of %d fields", ledger.Excerpt(out), len(queueFields))
	}
	f := make(map[string]string, len(fields))
	for i, name := range queueFields {
		f[name] = fields[i]
	}
	j, err := queueJob(f, loc)
	if err != nil {
		return j, fmt.Errorf("slurm: squeue, job %s: %w", ledger.Excerpt(f["JobID"]), err)
	}
	return j, nil
}

func queueJob(f map[string]string, loc *time.Location) (QueueJob, error) {
	j := QueueJob{ID: f["JobID"], User: f["UserName"], Account: unset(f["Account"]), Partition: unset(f["Partition"]), QOS: unset(f["QOS"]),
		State: f["State"], Reservation: unset(f["Reservation"]), Reason: unset(f["Reason"])}
	if j.ID == "" || j.User == "" || j.State == "" {
		return j, fmt.Errorf("no job id, user or state")
	}
	var err error
	if j.TimeLimit, err = Duration("TimeLimit", f["TimeLimit"]); err != nil {
		return j, err
	}
	if j.Used, err = Duration("TimeUsed", f["TimeUsed"]); err != nil {
		return j, err
	}
	if j.Start, err = localTime("StartTime", f["StartTime"], loc); err != nil {
		return j, err
	}
	if j.End, err = localTime("EndTime", f["EndTime"], loc); err != nil {
		return j, err
	}
	for _, n := range []struct {
		name string
		to   *int64
	}{{"NumCPUs", &j.CPUs}, {"NumNodes", &j.Nodes}, {"NumTasks", &j.Tasks}, {"RestartCnt", &j.Restarts}} {
		if *n.to, err = count(n.name, f[n.name]); err != nil {
			return j, err
		}
	}
	if j.TRES, err = ParseTRES(f["tres-alloc"]); err != nil {
		return j, err
	}
	j.GPUs = j.TRES.GPUs()
	if j.GPUs == 0 {
		j.GPUs, err = gpuCount(f["tres-per-node"], f["tres-per-job"], f["tres-per-task"], max(j.Nodes, 1), max(j.Tasks, 1))
	}
	return j, err
}

// Resources is what the job holds, in the terms of package charge.
func (j QueueJob) Resources() charge.Resources {
	return charge.Resources{Processors: j.CPUs, Nodes: j.Nodes, GPUs: j.GPUs, MemoryMB: j.TRES["mem"], QOS: j.QOS, Partition: j.Partition}
}

// Duration reads a time as Slurm prints one ([D-]H:MM:SS, M:SS, or
// minutes) in seconds; UNLIMITED is 0.
func Duration(field, s string) (int64, error) {
	switch s {
	case "UNLIMITED", "INFINITE", "NOT_SET", "Partition_Limit":
		return 0, nil
	}
	bad := fmt.Errorf("%s %s is not a time as Slurm writes one ([D-]H:MM:SS)", field, ledger.Excerpt(s))
	var days int64
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil || n < 0 || n > 1<<20 {
			return 0, bad
		}
		days, s = n, rest
	}
	parts := strings.Split(s, ":")
	if len(parts) > 3 || (days > 0 && len(parts) != 3) {
		return 0, bad
	}
	var secs int64
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 || (i > 0 && n > 59) || n > 1<<31 {
			return 0, bad
		}
		secs = secs*60 + n
	}
	if len(parts) == 1 {
		secs *= 60 // minutes alone
	}
	return days*86400 + secs, nil
}
