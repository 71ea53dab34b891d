package slurm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
)

// TRES is a job's trackable resources as Slurm writes them,
// "cpu=4,mem=1000M,node=1,billing=4,gres/gpu=1": name → count, memory in
// MB.
type TRES map[string]int64

// ParseTRES reads a TRES string; "" is no resources.
func ParseTRES(s string) (TRES, error) {
	t := TRES{}
	if s == "" || isUnset(s) {
		return t, nil
	}
	for _, item := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(item, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("slurm: TRES %s: item %s is not NAME=COUNT", ledger.Excerpt(s), ledger.Excerpt(item))
		}
		if _, dup := t[name]; dup {
			return nil, fmt.Errorf("slurm: TRES %s: %s given twice", ledger.Excerpt(s), ledger.Excerpt(name))
		}
		n, err := tresCount(name, value)
		if err != nil {
			return nil, fmt.Errorf("slurm: TRES %s: %w", ledger.Excerpt(s), err)
		}
		t[name] = n
	}
	return t, nil
}

// tresCount reads a count. Memory ("mem") carries Slurm's unit suffix (K,
// M, G, T; M when none), maybe with decimals ("1.50G"), and is returned in
// MB, rounded up.
func tresCount(name, value string) (int64, error) {
	if name != "mem" {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s is not a whole number of at least 0", ledger.Excerpt(name+"="+value))
		}
		return n, nil
	}
	mb := decimal.NewFromInt(1)
	if n := len(value); n > 0 {
		if u, ok := memoryUnits[value[n-1]]; ok {
			mb, value = u, value[:n-1]
		}
	}
	d, err := decimal.NewFromString(value)
	if err != nil || d.IsNegative() || strings.ContainsAny(value, "eE+-") {
		return 0, fmt.Errorf("%s is not an amount of memory", ledger.Excerpt("mem="+value))
	}
	d = d.Mul(mb).Ceil()
	if d.GreaterThan(decimal.NewFromInt(1 << 50)) {
		return 0, fmt.Errorf("%s is too large", ledger.Excerpt("mem="+value))
	}
	return d.IntPart(), nil
}

// memoryUnits are Slurm's memory suffixes, in MB.
var memoryUnits = map[byte]decimal.Decimal{
	'K': decimal.New(1, 0).Div(decimal.NewFromInt(1024)),
	'M': decimal.NewFromInt(1),
	'G': decimal.NewFromInt(1024),
	'T': decimal.NewFromInt(1024 * 1024),
}

// GPUs is the job's GPUs: gres/gpu, or the sum of the typed ones
// (gres/gpu:a100) when Slurm lists only those.
func (t TRES) GPUs() int64 {
	if n, ok := t["gres/gpu"]; ok {
		return n
	}
	var sum int64
	for name, n := range t {
		if strings.HasPrefix(name, "gres/gpu:") {
			sum += n
		}
	}
	return sum
}

// Resources is what the job holds, in the terms of package charge.
func (t TRES) Resources(qos, partition string) charge.Resources {
	return charge.Resources{Processors: t["cpu"], Nodes: t["node"], GPUs: t.GPUs(), MemoryMB: t["mem"], QOS: qos, Partition: partition}
}

// isUnset reports whether Slurm printed s for a value it does not have.
func isUnset(s string) bool {
	switch s {
	case "", "Unknown", "None", "(null)", "N/A":
		return true
	}
	return false
}
