package peer

import (
	"fmt"

	"github.com/ingot-hpc/ingot/ledger"
)

// Errors of this package.
var (
	// ErrURL marks a peer URL that is not https (or http on loopback).
	ErrURL = fmt.Errorf("%w: peer: bad URL", ledger.ErrInvalid)
	// ErrNotGranted marks a usage report of an allocation this bank did
	// not grant to the peer that reports it.
	ErrNotGranted = fmt.Errorf("%w: peer: not granted by this bank", ledger.ErrInvalid)
	// ErrReportPeriod marks a length of usage report periods that does
	// not divide a day.
	ErrReportPeriod = fmt.Errorf("%w: peer: usage report period", ledger.ErrInvalid)
)
