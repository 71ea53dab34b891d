package peer

import (
	"errors"
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
	// ErrGrantPending marks a usage report of an allocation granted by a
	// deposit of this bank's whose answer it has not recorded yet (the
	// peer applied it, its answer lost or not journaled here yet): not
	// final, the peer sends the report again, and the outbox here records
	// the answer meanwhile.
	ErrGrantPending = errors.New("peer: the grant's deposit is not answered here yet")
	// ErrReportPeriod marks a length of usage report periods that does
	// not divide a day.
	ErrReportPeriod = fmt.Errorf("%w: peer: usage report period", ledger.ErrInvalid)
	// ErrAway marks an away policy or credit line that cannot be.
	ErrAway = fmt.Errorf("%w: peer: bad away policy", ledger.ErrInvalid)
	// ErrBadAnswer marks a peer's answer this bank cannot record
	// (CheckAnswer): not the peer's last word, the transaction is sent
	// again.
	ErrBadAnswer = errors.New("peer: an answer this bank cannot record")
	// ErrWithdrawn marks a transaction the bank that began it withdrew
	// (Registry.Withdraw): the answer every later sending of it gets.
	ErrWithdrawn = fmt.Errorf("%w: peer: transaction withdrawn", ledger.ErrInactive)
)
