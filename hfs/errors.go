package hfs

import "errors"

// Sentinel errors. Functions wrap them with the node and value at fault, so
// callers test with errors.Is and show the wrapped message to people.
var (
	// ErrNilNode: a tree contains a nil node.
	ErrNilNode = errors.New("hfs: nil node")
	// ErrEmptyName: a node has no name.
	ErrEmptyName = errors.New("hfs: empty node name")
	// ErrDuplicateName: two nodes share a name (also what a cycle or a
	// node reachable twice looks like).
	ErrDuplicateName = errors.New("hfs: duplicate node name")
	// ErrNegative: an amount, weight or duration that must be >= 0 is negative.
	ErrNegative = errors.New("hfs: negative value")
	// ErrDynamicRange: a dynamic quota is not a fraction in 0..1.
	ErrDynamicRange = errors.New("hfs: dynamic quota outside 0..1")
	// ErrQuotaKind: a quota kind is not one of Static, Dynamic, Shares.
	ErrQuotaKind = errors.New("hfs: unknown quota kind")
	// ErrRootQuota: the root was given a quota; it takes the whole pool.
	ErrRootQuota = errors.New("hfs: the root takes the pool and has no quota")
	// ErrUnit: the rounding unit is zero or negative.
	ErrUnit = errors.New("hfs: rounding unit must be positive")
	// ErrTooManyUnits: the pool holds more than 2^62 rounding units.
	ErrTooManyUnits = errors.New("hfs: pool too large for the rounding unit")
	// ErrUnknownNode: a name that is not in the tree.
	ErrUnknownNode = errors.New("hfs: unknown node")
	// ErrUnboundedDemand: Available was asked about a node whose demand is
	// already unbounded, so there is no demand to subtract.
	ErrUnboundedDemand = errors.New("hfs: demand is unbounded")
	// ErrNotFinite: a share-tree value is NaN or infinite.
	ErrNotFinite = errors.New("hfs: value not finite")
	// ErrGroupOwnership: a node with children was given ownership; it is
	// set on leaves, and a group owns what its children own.
	ErrGroupOwnership = errors.New("hfs: ownership is set on leaves; a group owns what its children own")
	// ErrPriorityRange: a priority outside 0..MaxPriority.
	ErrPriorityRange = errors.New("hfs: priority outside 0..1000")
	// ErrJobsAboveDemand: a preemption was given jobs that hold more than
	// their node's demand.
	ErrJobsAboveDemand = errors.New("hfs: jobs hold more than their node's demand")
	// ErrInput: an HFS input document is malformed.
	ErrInput = errors.New("hfs: invalid input")
)
