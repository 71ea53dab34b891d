package charge

import (
	"errors"
	"testing"
)

// node is the machine of the policy examples (docs/charge-policies.md): 32 cores,
// 128000 MB of memory, 4 GPUs and 1000000 MB of disk per node.
var node = Shape{Cores: 32, MemoryMB: 128000, GPUs: 4, DiskMB: 1_000_000}

// job is the usage of the policy examples: 8 processors on 1 node with
// 64000 MB (half a node's memory), a 7200 s limit.
func job(state ExitState, wallclock, cpu int64) Usage {
	return Usage{
		Resources:             Resources{Processors: 8, Nodes: 1, MemoryMB: 64000},
		WallclockSeconds:      wallclock,
		WallclockLimitSeconds: 7200,
		CPUSeconds:            cpu,
		State:                 state,
	}
}

// TestPolicies prices the same jobs under every policy with the default
// table (1 credit per processor-second), so every number is
// processors × seconds × consumption, checkable by hand:
//
//	WC:      8 processors × wallclock used
//	CPU:     8 × wallclock × (CPU seconds ÷ (8 × wallclock)) = CPU seconds
//	PE:      max(8/32, 64000/128000, 0/4, 0/1000000) × 32 = 16 processors × wallclock
//	BLOCKED: max(1 node, ⌈0.5⌉) = 1 node × 32 cores × wallclock
//	REQUESTED: 8 × 7200 s limit = 57600
func TestPolicies(t *testing.T) {
	completed := job(Completed, 3600, 14400)    // ran 1 h of 2 h, CPUs half busy
	cancelled := job(Cancelled, 600, 2400)      // removed after 10 min
	timedOut := job(Timeout, 7200, 28800)       // killed at its limit
	cancelledAtLimit := job(Cancelled, 7200, 0) // removed, but only once its limit was used
	failed := job(Failed, 1800, 14400)          // exited non-zero after 30 min
	nodeFail := job(NodeFail, 1800, 14400)      // lost a node after 30 min

	cases := []struct {
		job    string
		u      Usage
		policy Policy
		want   string
	}{
		{"completed", completed, DebitAllWC, "28800.00"},
		{"completed", completed, DebitSuccessfulWC, "28800.00"},
		{"completed", completed, DebitAllCPU, "14400.00"},
		{"completed", completed, DebitSuccessfulCPU, "14400.00"},
		{"completed", completed, DebitAllPE, "57600.00"},
		{"completed", completed, DebitSuccessfulPE, "57600.00"},
		{"completed", completed, DebitAllBlocked, "115200.00"},
		{"completed", completed, DebitSuccessfulBlocked, "115200.00"},
		{"completed", completed, DebitSuccessfulNode, "115200.00"},
		{"completed", completed, DebitRequestedWC, "57600.00"},

		{"cancelled", cancelled, DebitAllWC, "4800.00"},
		{"cancelled", cancelled, DebitSuccessfulWC, "0.00"},
		{"cancelled", cancelled, DebitAllCPU, "2400.00"},
		{"cancelled", cancelled, DebitSuccessfulCPU, "0.00"},
		{"cancelled", cancelled, DebitAllPE, "9600.00"},
		{"cancelled", cancelled, DebitSuccessfulPE, "0.00"},
		{"cancelled", cancelled, DebitAllBlocked, "19200.00"},
		{"cancelled", cancelled, DebitSuccessfulBlocked, "0.00"},
		{"cancelled", cancelled, DebitSuccessfulNode, "0.00"},
		{"cancelled", cancelled, DebitRequestedWC, "57600.00"},

		{"timeout", timedOut, DebitSuccessfulWC, "57600.00"},
		{"timeout", timedOut, DebitSuccessfulCPU, "28800.00"},
		{"timeout", timedOut, DebitSuccessfulPE, "115200.00"},
		{"timeout", timedOut, DebitSuccessfulBlocked, "230400.00"},
		{"cancelled at limit", cancelledAtLimit, DebitSuccessfulWC, "57600.00"},
		{"failed", failed, DebitSuccessfulWC, "14400.00"},
		{"node_fail", nodeFail, DebitSuccessfulWC, "0.00"},
		{"node_fail", nodeFail, DebitAllWC, "14400.00"},

		// CPU time above dedicated time is capped at ConsumptionRate 1.
		{"busy", job(Completed, 3600, 40000), DebitAllCPU, "28800.00"},
		// 40 processors need ⌈40/32⌉ = 2 whole nodes even when the
		// scheduler reported none: 64 cores × 3600 s. PE is just 40.
		{"40 processors", Usage{Resources: Resources{Processors: 40}, WallclockSeconds: 3600, State: Completed}, DebitAllBlocked, "230400.00"},
		{"40 processors", Usage{Resources: Resources{Processors: 40}, WallclockSeconds: 3600, State: Completed}, DebitAllPE, "144000.00"},
		// 2 of a node's 4 GPUs block half the node: PE = 2/4 × 32 = 16.
		{"GPU job", Usage{Resources: Resources{Processors: 4, Nodes: 1, GPUs: 2}, WallclockSeconds: 3600, State: Completed}, DebitAllPE, "57600.00"},
	}
	for _, c := range cases {
		t.Run(c.policy.String()+"/"+c.job, func(t *testing.T) {
			a, err := Price(DefaultRateTable(), c.policy, node, c.u)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Credits.StringFixed(2); got != c.want {
				t.Errorf("credits = %s, want %s\n%s", got, c.want, a)
			}
			if charged := c.want != "0.00"; charged == (a.Explanation.NoCharge != "") {
				t.Errorf("NoCharge = %q for credits %s", a.Explanation.NoCharge, c.want)
			}
		})
	}
}

// TestPolicyErrors: the policies that need a node shape or a limit say so.
func TestPolicyErrors(t *testing.T) {
	noLimit := job(Completed, 3600, 0)
	noLimit.WallclockLimitSeconds = 0
	cases := []struct {
		name   string
		policy Policy
		shape  Shape
		u      Usage
		want   error
	}{
		{"PE without shape", DebitAllPE, Shape{MemoryMB: 1000}, job(Completed, 60, 0), ErrNoShape},
		{"BLOCKED without shape", DebitSuccessfulBlocked, Shape{}, job(Completed, 60, 0), ErrNoShape},
		{"REQUESTEDWC without limit", DebitRequestedWC, node, noLimit, ErrNoWallclockLimit},
		{"unset policy", 0, node, job(Completed, 60, 0), ErrUnknownPolicy},
		{"out-of-range policy", DebitRequestedWC + 1, node, job(Completed, 60, 0), ErrUnknownPolicy},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Price(DefaultRateTable(), c.policy, c.shape, c.u); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestParsePolicy(t *testing.T) {
	cases := []struct {
		in   string
		want Policy
		err  error
	}{
		{"DEBITSUCCESSFULWC", DebitSuccessfulWC, nil},
		{"debitallpe", DebitAllPE, nil},
		{" DebitRequestedWC ", DebitRequestedWC, nil},
		{"DEBITSUCCESSFULNODE", DebitSuccessfulNode, nil},
		{"DEBITSOMETIMES", 0, ErrUnknownPolicy},
		{"", 0, ErrUnknownPolicy},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParsePolicy(c.in)
			if got != c.want || !errors.Is(err, c.err) {
				t.Errorf("ParsePolicy(%q) = %v, %v; want %v, %v", c.in, got, err, c.want, c.err)
			}
		})
	}
	for p := DebitAllWC; p <= DebitRequestedWC; p++ {
		if back, err := ParsePolicy(p.String()); back != p || err != nil {
			t.Errorf("ParsePolicy(%q) = %v, %v", p, back, err)
		}
	}
}

func TestResolvePolicy(t *testing.T) {
	cases := []struct {
		name                     string
		global, machine, project Policy
		want                     Policy
	}{
		{"nothing set", 0, 0, 0, DefaultPolicy},
		{"global", DebitAllWC, 0, 0, DebitAllWC},
		{"machine over global", DebitAllWC, DebitAllPE, 0, DebitAllPE},
		{"project over machine", DebitAllWC, DebitAllPE, DebitRequestedWC, DebitRequestedWC},
		{"project over global", DebitAllWC, 0, DebitAllCPU, DebitAllCPU},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ResolvePolicy(c.global, c.machine, c.project); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestPolicyText(t *testing.T) {
	for p := Policy(0); p <= DebitRequestedWC; p++ {
		text, err := p.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Policy
		if err := back.UnmarshalText(text); err != nil || back != p {
			t.Errorf("%v: round trip gave %v, %v", p, back, err)
		}
	}
	if _, err := Policy(200).MarshalText(); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("MarshalText of an unknown policy: %v", err)
	}
}

func TestParseExitState(t *testing.T) {
	for _, c := range []struct {
		in   string
		want ExitState
		err  error
	}{
		{"COMPLETED", Completed, nil},
		{"timeout", Timeout, nil},
		{"NODE_FAIL", NodeFail, nil},
		{"OUT_OF_MEMORY", OutOfMemory, nil},
		{"PENDING", 0, ErrUnknownExitState},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseExitState(c.in)
			if got != c.want || !errors.Is(err, c.err) {
				t.Errorf("ParseExitState(%q) = %v, %v; want %v, %v", c.in, got, err, c.want, c.err)
			}
		})
	}
}
