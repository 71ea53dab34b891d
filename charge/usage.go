package charge

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Bounds beyond which a resource or duration is taken for a mistake.
const (
	MaxCount      = 10_000_000            // processors, nodes, GPUs, licenses; cores or GPUs per node
	MaxMB         = 1_000_000_000_000     // memory or disk in MB: an exabyte
	MaxSeconds    = 10 * 31_557_600       // ten Julian years of wallclock
	MaxCPUSeconds = MaxCount * MaxSeconds // every allowed processor busy for the longest allowed time
)

// Resources are what a job holds and the properties name-based rates match.
// Counts are whole; memory and disk are totals for the job in MB.
type Resources struct {
	Processors int64  `json:"processors"`
	Nodes      int64  `json:"nodes,omitempty"`
	GPUs       int64  `json:"gpus,omitempty"`
	MemoryMB   int64  `json:"memory_mb,omitempty"`
	DiskMB     int64  `json:"disk_mb,omitempty"`
	QOS        string `json:"qos,omitempty"`       // matched by QualityOfService rates
	Partition  string `json:"partition,omitempty"` // matched by Partition rates
	NodeType   string `json:"node_type,omitempty"` // matched by NodeType rates
	// Licenses maps a license name to the number held, e.g. {"matlab": 2};
	// matched by License rates.
	Licenses map[string]int64 `json:"licenses,omitempty"`
}

// Usage is what a job used, as reported when it is charged. Durations are
// whole seconds (int64): schedulers report whole seconds, and an integer
// cannot drift.
type Usage struct {
	Resources
	WallclockSeconds      int64 `json:"wallclock_seconds"`                 // wallclock used
	WallclockLimitSeconds int64 `json:"wallclock_limit_seconds,omitempty"` // wallclock requested (the limit); 0 if unknown
	CPUSeconds            int64 `json:"cpu_seconds,omitempty"`             // CPU time consumed, all processors together
	// Start anchors time-of-day pricing: WallDuration is laid from Start
	// on (to the whole second). Needed only when the table has windows.
	Start time.Time `json:"start,omitzero"`
	// End, with Start, bounds the wallclock: it cannot be longer than
	// End − Start (it can be shorter: a suspended job).
	End   time.Time `json:"end,omitzero"`
	State ExitState `json:"state"` // how the job ended; Running for an incremental charge
}

// Request is what a job asks for: the basis of a quote and of a lien.
type Request struct {
	Resources
	WallclockLimitSeconds int64 `json:"wallclock_limit_seconds"`
	// Start is when the job is expected to start; needed only when the
	// table has windows (the scheduler passes now at submit, the actual
	// start when it places the lien).
	Start time.Time `json:"start,omitzero"`
}

// Shape is a machine's node: what one node has. PE, BLOCKED and NODE
// policies need Cores; a zero memory, GPU or disk size means the machine
// does not describe it, and processor equivalents then ignore it.
type Shape struct {
	Cores    int64 `json:"cores"`
	MemoryMB int64 `json:"memory_mb,omitempty"`
	GPUs     int64 `json:"gpus,omitempty"`
	DiskMB   int64 `json:"disk_mb,omitempty"`
}

// ExitState is how a job ended, in Slurm's terms.
type ExitState uint8

// Exit states. Completed, Failed, Timeout, OutOfMemory, Running and Requeued count
// as "successful" for the SUCCESSFUL policies (the job ran to its own end,
// or to its limit, or is still running); the others mean the job was
// removed early.
const (
	Completed   ExitState = iota + 1 // exited 0
	Failed                           // exited non-zero: it ran to its own end
	Timeout                          // killed at its wallclock limit
	OutOfMemory                      // killed for exceeding its own memory request
	Running                          // still running: an incremental charge
	Cancelled                        // removed by its user or an admin
	NodeFail                         // removed because a node failed
	Preempted                        // removed by the scheduler for another job
	BootFail                         // its nodes failed to boot
	Deadline                         // removed at its deadline before it finished
	// Requeued is a run of a job that was put back in the queue (by its
	// user, an admin, a node failure or preemption) and runs again: the
	// run's time was the job's work, so it counts as successful, and a job
	// that requeues itself pays for every run (Slurm's own usage counts
	// them too).
	Requeued
)

var exitStateNames = []string{
	"completed", "failed", "timeout", "out_of_memory", "running",
	"cancelled", "node_fail", "preempted", "boot_fail", "deadline",
	"requeued",
}

// ParseExitState reads an exit state name case-insensitively, so Slurm's
// COMPLETED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY read as they are.
func ParseExitState(s string) (ExitState, error) {
	return parseEnum[ExitState](exitStateNames, s, ErrUnknownExitState)
}

func (s ExitState) String() string { return enumName(exitStateNames, s) }

// MarshalText writes the name ("" for an unset state).
func (s ExitState) MarshalText() ([]byte, error) {
	return marshalEnum(exitStateNames, s, ErrUnknownExitState)
}

// UnmarshalText reads what MarshalText writes.
func (s *ExitState) UnmarshalText(text []byte) (err error) {
	*s, err = unmarshalEnum[ExitState](exitStateNames, text, ErrUnknownExitState)
	return err
}

// ranToOwnEnd reports whether a job in this state was not removed early.
func (s ExitState) ranToOwnEnd() bool {
	switch s {
	case Completed, Failed, Timeout, OutOfMemory, Running, Requeued:
		return true
	}
	return false
}

// successful reports whether the SUCCESSFUL policies charge the job: it
// ran to its own end, or used its whole wallclock limit whatever the
// scheduler called its end.
func (u Usage) successful() bool {
	return u.State.ranToOwnEnd() ||
		(u.WallclockLimitSeconds > 0 && u.WallclockSeconds >= u.WallclockLimitSeconds)
}

func (r Resources) validate() error {
	err := checkBounds(
		bound{"processors", r.Processors, MaxCount},
		bound{"nodes", r.Nodes, MaxCount},
		bound{"GPUs", r.GPUs, MaxCount},
		bound{"memory MB", r.MemoryMB, MaxMB},
		bound{"disk MB", r.DiskMB, MaxMB},
	)
	if err != nil {
		return err
	}
	// Licenses are checked in name order, so that a job with two bad ones
	// is told of the same one each time; sorting costs more than checking,
	// so only a job with a bad license is sorted.
	for name, count := range r.Licenses {
		if name == "" || count < 0 || count > MaxCount {
			return r.firstBadLicense()
		}
	}
	return nil
}

func (r Resources) firstBadLicense() error {
	for _, name := range slices.Sorted(maps.Keys(r.Licenses)) {
		if name == "" {
			return fmt.Errorf("%w: a license with no name", ErrBadLicense)
		}
		if err := checkBounds(bound{"license " + name, r.Licenses[name], MaxCount}); err != nil {
			return err
		}
	}
	return nil
}

func (u Usage) validate() error {
	if err := u.Resources.validate(); err != nil {
		return err
	}
	err := checkBounds(
		bound{"wallclock seconds", u.WallclockSeconds, MaxSeconds},
		bound{"wallclock limit seconds", u.WallclockLimitSeconds, MaxSeconds},
		bound{"CPU seconds", u.CPUSeconds, MaxCPUSeconds},
	)
	if err != nil {
		return err
	}
	if u.State.String() == "" {
		return fmt.Errorf("%w: %d (a charged job needs one)", ErrUnknownExitState, u.State)
	}
	if u.Start.IsZero() || u.End.IsZero() {
		return nil
	}
	if u.End.Before(u.Start) {
		return fmt.Errorf("%w: started %s, ended %s", ErrEndBeforeStart, u.Start.UTC().Format(time.RFC3339), u.End.UTC().Format(time.RFC3339))
	}
	if interval := u.End.Sub(u.Start); time.Duration(u.WallclockSeconds)*time.Second > interval {
		return fmt.Errorf("%w: %d s between %s and %s", ErrWallclockBeyondInterval, u.WallclockSeconds, u.Start.UTC().Format(time.RFC3339), u.End.UTC().Format(time.RFC3339))
	}
	return nil
}

func (s Shape) validate() error {
	return checkBounds(
		bound{"cores per node", s.Cores, MaxCount},
		bound{"memory MB per node", s.MemoryMB, MaxMB},
		bound{"GPUs per node", s.GPUs, MaxCount},
		bound{"disk MB per node", s.DiskMB, MaxMB},
	)
}

// bound is a named value that must lie in 0..max.
type bound struct {
	what       string
	value, max int64
}

func checkBounds(bounds ...bound) error {
	for _, b := range bounds {
		switch {
		case b.value < 0:
			return fmt.Errorf("%w: %s %d", ErrNegative, b.what, b.value)
		case b.value > b.max:
			return fmt.Errorf("%w: %s %d (at most %d)", ErrAbsurd, b.what, b.value, b.max)
		}
	}
	return nil
}
