package lien

import (
	"errors"
	"fmt"

	"github.com/ingot-hpc/ingot/ledger"
)

// Sentinel errors; they wrap the ledger's where the meaning is the same, so
// callers can test either.
var (
	// ErrNoProject marks a charge or lien that names no project when the
	// user has no default project either.
	ErrNoProject = errors.New("lien: no project")
	// ErrNotMember marks a user who may not charge the project.
	ErrNotMember = errors.New("lien: user is not a member of the project")
	// ErrNoLien marks a job that has no (active) lien: a kind of not found.
	ErrNoLien = fmt.Errorf("%w: lien: no active lien for the job", ledger.ErrNotFound)
	// ErrAlreadyCharged marks a second final charge for the same job.
	ErrAlreadyCharged = errors.New("lien: job already charged")
	// ErrRefund marks a refund beyond what the charge took.
	ErrRefund = errors.New("lien: refund exceeds what was charged")
	// ErrQuote marks an unknown, expired or used-up guaranteed quote.
	ErrQuote = errors.New("lien: quote not usable")
	// ErrHomed marks a lien or charge of a project homed at a peer bank
	// (HomedError): the home bank makes it, through the server.
	ErrHomed = fmt.Errorf("%w: lien: project homed at a peer bank", ledger.ErrInvalid)
	// ErrReservation marks an unknown or ended reservation.
	ErrReservation = errors.New("lien: reservation not usable")
)
