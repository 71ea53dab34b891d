package slurm

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
)

// Slurm's markers in a job description's numbers (slurm.h): a field not
// given, and no limit.
const (
	noVal    = 0xfffffffe // NO_VAL: not given
	infinite = 0xffffffff // INFINITE: no limit
	noVal16  = 0xfffe
	// memPerCPU is the flag bit of pn_min_memory meaning "per CPU".
	memPerCPU = uint64(1) << 63
	// exactFloat is where Lua's numbers (doubles) stop being exact: a larger
	// memory field cannot be read back, and is left out of the price.
	exactFloat = uint64(1) << 53
)

// Submission is a job description as job_submit.lua hands it over: the
// fields of job_desc, written as Lua prints them (unset numbers are
// Slurm's NO_VAL markers), and the partition's default and maximum time.
type Submission struct {
	Account, Partition, QOS string
	TimeLimit               string // minutes
	PartitionDefaultTime    string // minutes
	PartitionMaxTime        string // minutes
	MinCPUs, NumTasks       string
	CPUsPerTask, MinNodes   string
	MinMemory               string // pn_min_memory: MB per node, or per CPU with the top bit set
	TRESPerNode, TRESPerJob string // "gres:gpu:2", "gres/gpu:a100:1", ...
	TRESPerTask             string
}

// Request is the job's request in the terms of package charge: what its
// lien will be priced at. A job without a time limit, neither its own nor
// its partition's, cannot be priced and is refused.
func (s Submission) Request() (charge.Request, error) {
	var r charge.Request
	limit, err := s.timeLimit()
	if err != nil {
		return r, err
	}
	r.WallclockLimitSeconds = limit * 60
	cpus, err := s.cpus()
	if err != nil {
		return r, err
	}
	nodes, err := optional("min_nodes", s.MinNodes, noVal)
	if err != nil {
		return r, err
	}
	tasks, err := optional("num_tasks", s.NumTasks, noVal)
	if err != nil {
		return r, err
	}
	gpus, err := s.gpus(max(nodes, 1), max(tasks, 1))
	if err != nil {
		return r, err
	}
	memory, err := s.memory(max(nodes, 1), cpus)
	if err != nil {
		return r, err
	}
	r.Resources = charge.Resources{Processors: cpus, Nodes: nodes, GPUs: gpus, MemoryMB: memory, QOS: unset(s.QOS), Partition: unset(s.Partition)}
	return r, nil
}

// timeLimit is the job's limit in minutes: its own, else the partition's
// default, else the partition's maximum.
func (s Submission) timeLimit() (int64, error) {
	for _, f := range []struct{ name, value string }{{"time_limit", s.TimeLimit}, {"the partition's default time", s.PartitionDefaultTime}, {"the partition's maximum time", s.PartitionMaxTime}} {
		n, err := optional(f.name, f.value, noVal)
		if err != nil {
			return 0, err
		}
		switch {
		case n == infinite:
			return 0, fmt.Errorf("slurm: the job has no time limit (%s is UNLIMITED): give one with -t/--time", f.name)
		case n > 0:
			if n > 1<<31 {
				return 0, fmt.Errorf("slurm: %s %d minutes is beyond any job", f.name, n)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("slurm: the job has no time limit and its partition no default or maximum: give one with -t/--time")
}

// cpus is the job's CPUs: min_cpus, or tasks × CPUs per task if more.
func (s Submission) cpus() (int64, error) {
	cpus, err := optional("min_cpus", s.MinCPUs, noVal)
	if err != nil {
		return 0, err
	}
	tasks, err := optional("num_tasks", s.NumTasks, noVal)
	if err != nil {
		return 0, err
	}
	perTask, err := optional("cpus_per_task", s.CPUsPerTask, noVal16)
	if err != nil {
		return 0, err
	}
	if n := max(tasks, 1) * max(perTask, 1); n > cpus {
		cpus = n
	}
	return max(cpus, 1), nil
}

// gpuSpec matches a GPU request in a TRES list: gres:gpu:2, gres/gpu:2,
// gres:gpu:a100:2, gpu:2.
var gpuSpec = regexp.MustCompile(`^(?:gres[:/])?gpu(?::[^:,]+)?:(\d+)$`)

// gpus is the job's GPUs, from its per-node, per-job and per-task TRES.
func (s Submission) gpus(nodes, tasks int64) (int64, error) {
	return gpuCount(s.TRESPerNode, s.TRESPerJob, s.TRESPerTask, nodes, tasks)
}

// gpuCount is the GPUs of a job's request: per node × nodes, per job, and
// per task × tasks.
func gpuCount(perNode, perJob, perTask string, nodes, tasks int64) (int64, error) {
	var total int64
	for _, f := range []struct {
		name, value string
		times       int64
	}{{"tres_per_node", perNode, nodes}, {"tres_per_job", perJob, 1}, {"tres_per_task", perTask, tasks}} {
		if unset(f.value) == "" {
			continue
		}
		for _, item := range strings.Split(f.value, ",") {
			if !strings.Contains(item, "gpu") {
				continue
			}
			m := gpuSpec.FindStringSubmatch(item)
			if m == nil {
				return 0, fmt.Errorf("slurm: %s %s: %s is not a GPU count (gres:gpu[:TYPE]:N)", f.name, ledger.Excerpt(f.value), ledger.Excerpt(item))
			}
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil || n > 1<<20 {
				return 0, fmt.Errorf("slurm: %s %s: %s GPUs is beyond any job", f.name, ledger.Excerpt(f.value), ledger.Excerpt(m[1]))
			}
			total += n * f.times
		}
	}
	return total, nil
}

// memory is the job's memory in MB: per node × nodes, or per CPU × CPUs.
func (s Submission) memory(nodes, cpus int64) (int64, error) {
	if unset(s.MinMemory) == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s.MinMemory, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, nil // NO_VAL64 as a Lua double prints as 2^64
	}
	if err != nil {
		return 0, fmt.Errorf("slurm: pn_min_memory %s is not a whole number", ledger.Excerpt(s.MinMemory))
	}
	per := nodes
	if v >= memPerCPU {
		v, per = v-memPerCPU, cpus
	}
	if v >= exactFloat || v == noVal {
		return 0, nil // not given, or not exact in Lua's numbers
	}
	if v > 1<<40 {
		return 0, fmt.Errorf("slurm: pn_min_memory %d MB is beyond any job", v)
	}
	return int64(v) * per, nil
}

// optional reads a whole number that Slurm leaves at notGiven (or NO_VAL,
// or empty) when the job does not give it; unset is 0.
func optional(field, s string, notGiven int64) (int64, error) {
	if unset(s) == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("slurm: %s %s is not a whole number of at least 0", field, ledger.Excerpt(s))
	}
	if n == notGiven || n == noVal {
		return 0, nil
	}
	return n, nil
}

// unset is s, or "" where Slurm or Lua wrote that it has no value.
func unset(s string) string {
	if isUnset(s) || s == "nil" {
		return ""
	}
	return s
}

// NodeFor is the bank's node for a Slurm account: the node of that name,
// or else the one node whose last dotted part it is (lab1 is chem.lab1
// when `ingot slurm import` made the tree); nodes are the bank's names.
func NodeFor(account string, nodes []string) (string, error) {
	var found []string
	for _, n := range nodes {
		if n == account {
			return n, nil
		}
		if strings.HasSuffix(n, "."+account) {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("slurm: account %s: the bank has no project of that name", ledger.Excerpt(account))
	}
	return "", fmt.Errorf("slurm: account %s: the bank has several projects of that name (%s): name the Slurm account as the project", ledger.Excerpt(account), strings.Join(found, ", "))
}

// SlurmName is the Slurm account of a bank node: its last dotted part.
func SlurmName(node string) string {
	return node[strings.LastIndexByte(node, '.')+1:]
}
