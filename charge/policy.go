package charge

import (
	"fmt"
	"strconv"
	"strings"
)

// Policy is a charge policy: which jobs are charged, and which processor
// count and WallDuration the rate table is applied to. The names are
// Moab's and Gold's. The zero Policy means "not set" (see ResolvePolicy).
//
// Every policy prices the job with the same formula; a policy only chooses
// the Processors quantity, the WallDuration, the ConsumptionRate, and
// whether the job is charged at all. Other quantities (GPUs, Memory, ...)
// are the job's own under every policy, Nodes too except under the whole-node
// policies. "Successful" means the job ran to its own end (completed,
// failed, timeout, out_of_memory, still running for an incremental
// charge, or a run of a job that was requeued and runs again) or used its whole wallclock limit; a job removed early
// (cancelled, node_fail, preempted, boot_fail, deadline) is charged nothing
// under the SUCCESSFUL policies.
type Policy uint8

const (
	// DebitAllWC charges every job: Processors = processors dedicated,
	// WallDuration = wallclock used.
	DebitAllWC Policy = iota + 1
	// DebitSuccessfulWC is DebitAllWC for successful jobs only. The default.
	DebitSuccessfulWC
	// DebitAllCPU charges every job for CPU time consumed rather than
	// dedicated: as DebitAllWC with ConsumptionRate = CPU seconds ÷
	// (processors × wallclock used), at most 1 (1 when no processor time
	// was dedicated). ConsumptionRate scales every time-scaled rate.
	DebitAllCPU
	// DebitSuccessfulCPU is DebitAllCPU for successful jobs only.
	DebitSuccessfulCPU
	// DebitAllPE charges every job for processor equivalents: Processors =
	// PE = max(processors/P, memory/M, disk/D, GPUs/G) × P over the
	// machine's node shape (P cores, M MB memory, D MB disk, G GPUs per
	// node; a size the shape leaves at 0 is left out). A memory-heavy job
	// pays for the cores it keeps others from. PE may be fractional.
	DebitAllPE
	// DebitSuccessfulPE is DebitAllPE for successful jobs only.
	DebitSuccessfulPE
	// DebitAllBlocked charges every job for the whole nodes it blocks:
	// Nodes = the nodes allocated, or if more, the fewest whole nodes that
	// hold its resources, ⌈max(processors/P, memory/M, disk/D, GPUs/G)⌉;
	// Processors = Nodes × P.
	DebitAllBlocked
	// DebitSuccessfulBlocked is DebitAllBlocked for successful jobs only.
	DebitSuccessfulBlocked
	// DebitSuccessfulNode is Moab's other name for DebitSuccessfulBlocked
	// (Moab treats the two alike); kept so that configurations carry over.
	DebitSuccessfulNode
	// DebitRequestedWC charges every job for the wallclock it asked for:
	// as DebitAllWC with WallDuration = the wallclock limit, whatever was
	// used. The limit must be known.
	DebitRequestedWC
)

// DefaultPolicy applies when neither the bank, the machine nor the project sets one.
const DefaultPolicy = DebitSuccessfulWC

var policyNames = []string{
	"DEBITALLWC", "DEBITSUCCESSFULWC", "DEBITALLCPU", "DEBITSUCCESSFULCPU",
	"DEBITALLPE", "DEBITSUCCESSFULPE", "DEBITALLBLOCKED", "DEBITSUCCESSFULBLOCKED",
	"DEBITSUCCESSFULNODE", "DEBITREQUESTEDWC",
}

// metric is what a policy measures a job by.
type metric uint8

const (
	dedicatedWC metric = iota
	consumedCPU
	processorEquivalents
	wholeNodes
	requestedWC
)

var policyRules = [...]struct {
	successfulOnly bool
	metric         metric
}{
	DebitAllWC:             {false, dedicatedWC},
	DebitSuccessfulWC:      {true, dedicatedWC},
	DebitAllCPU:            {false, consumedCPU},
	DebitSuccessfulCPU:     {true, consumedCPU},
	DebitAllPE:             {false, processorEquivalents},
	DebitSuccessfulPE:      {true, processorEquivalents},
	DebitAllBlocked:        {false, wholeNodes},
	DebitSuccessfulBlocked: {true, wholeNodes},
	DebitSuccessfulNode:    {true, wholeNodes},
	DebitRequestedWC:       {false, requestedWC},
}

// ParsePolicy reads a policy name case-insensitively ("DebitSuccessfulWC",
// "debitallpe").
func ParsePolicy(s string) (Policy, error) {
	return parseEnum[Policy](policyNames, s, ErrUnknownPolicy)
}

func (p Policy) String() string { return enumName(policyNames, p) }

// MarshalText writes the name ("" for an unset policy).
func (p Policy) MarshalText() ([]byte, error) { return marshalEnum(policyNames, p, ErrUnknownPolicy) }

// UnmarshalText reads what MarshalText writes.
func (p *Policy) UnmarshalText(text []byte) (err error) {
	*p, err = unmarshalEnum[Policy](policyNames, text, ErrUnknownPolicy)
	return err
}

// ResolvePolicy returns the policy for a job: the project's override if it
// sets one, else the machine's, else the bank's global one, else
// DefaultPolicy. Pass the zero Policy for a level that sets none.
func ResolvePolicy(global, machine, project Policy) Policy {
	for _, p := range []Policy{project, machine, global} {
		if p != 0 {
			return p
		}
	}
	return DefaultPolicy
}

// chargedQuantities are the job's quantities as the policy counts them.
type chargedQuantities struct {
	values      [len(valueNames)]fraction // by the index of the value-based rate name
	seconds     int64                     // WallDuration
	consumption fraction                  // ConsumptionRate
	basis       []string                  // how the policy got them, for the explanation
}

// quantities applies the policy to the usage.
func (p Policy) quantities(shape Shape, u Usage) (chargedQuantities, error) {
	q := chargedQuantities{
		values: [...]fraction{
			processors: integer(u.Processors),
			nodes:      integer(u.Nodes),
			gpus:       integer(u.GPUs),
			memory:     integer(u.MemoryMB),
			disk:       integer(u.DiskMB),
			cpuTime:    integer(u.CPUSeconds),
		},
		seconds:     u.WallclockSeconds,
		consumption: integer(1),
	}
	// The common lines without fmt, which took 7% of a price (a CPU
	// profile of BenchmarkPrice).
	processorsBasis := "Processors = " + strconv.FormatInt(u.Processors, 10) + " dedicated"
	wall := "WallDuration = " + strconv.FormatInt(u.WallclockSeconds, 10) + " s"
	consumption := "ConsumptionRate = 1"
	switch policyRules[p].metric {
	case consumedCPU:
		dedicated := u.Processors * u.WallclockSeconds // at most MaxCount × MaxSeconds: no overflow
		switch {
		case dedicated == 0:
			consumption = "ConsumptionRate = 1 (no processor time dedicated)"
		case u.CPUSeconds >= dedicated:
			consumption = fmt.Sprintf("ConsumptionRate = min(1, %d CPU s ÷ (%d processors × %d s)) = 1", u.CPUSeconds, u.Processors, u.WallclockSeconds)
		default:
			q.consumption = fractionOf(u.CPUSeconds, dedicated)
			consumption = fmt.Sprintf("ConsumptionRate = %d CPU s ÷ (%d processors × %d s) = %s", u.CPUSeconds, u.Processors, u.WallclockSeconds, q.consumption.display())
		}
	case processorEquivalents:
		share, how, err := shape.share(p, u.Resources)
		if err != nil {
			return q, err
		}
		q.values[processors] = share.mul(integer(shape.Cores))
		processorsBasis = fmt.Sprintf("Processors = PE = %s × %d cores = %s", how, shape.Cores, q.values[processors].display())
	case wholeNodes:
		share, how, err := shape.share(p, u.Resources)
		if err != nil {
			return q, err
		}
		n := max(u.Nodes, share.ceil())
		q.values[nodes] = integer(n)
		q.values[processors] = integer(n).mul(integer(shape.Cores))
		processorsBasis = fmt.Sprintf("Processors = whole nodes × cores = %d × %d = %s; whole nodes = max(%d allocated, ⌈%s⌉ = %d)",
			n, shape.Cores, q.values[processors].display(), u.Nodes, how, share.ceil())
	case requestedWC:
		if u.WallclockLimitSeconds == 0 {
			return q, fmt.Errorf("%w: %s charges the wallclock limit", ErrNoWallclockLimit, p)
		}
		q.seconds = u.WallclockLimitSeconds
		wall = fmt.Sprintf("WallDuration = %d s, the limit (%d s used)", u.WallclockLimitSeconds, u.WallclockSeconds)
	}
	q.basis = []string{processorsBasis, wall, consumption}
	return q, nil
}

// share returns the largest fraction of one node that the job's resources
// fill, max(processors/P, memory/M, disk/D, GPUs/G) over the sizes the
// shape gives, and that expression written out.
func (s Shape) share(p Policy, r Resources) (fraction, string, error) {
	if s.Cores == 0 {
		return fraction{}, "", fmt.Errorf("%w: %s needs the machine's cores per node", ErrNoShape, p)
	}
	largest := integer(0)
	var terms []string
	for _, d := range []struct {
		what          string
		used, perNode int64
	}{
		{"processors", r.Processors, s.Cores},
		{"memory MB", r.MemoryMB, s.MemoryMB},
		{"disk MB", r.DiskMB, s.DiskMB},
		{"GPUs", r.GPUs, s.GPUs},
	} {
		if d.perNode == 0 {
			continue
		}
		if f := fractionOf(d.used, d.perNode); f.cmp(largest) > 0 {
			largest = f
		}
		terms = append(terms, fmt.Sprintf("%s %d/%d", d.what, d.used, d.perNode))
	}
	return largest, "max(" + strings.Join(terms, ", ") + ")", nil
}
