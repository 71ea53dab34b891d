package digest

import (
	"errors"
	"fmt"

	"github.com/ingot-hpc/ingot/ledger"
)

// ErrInvalid marks a contact or setting that cannot be, said in full; it
// is a ledger.ErrInvalid, so the CLI and the API answer it as one.
var ErrInvalid = fmt.Errorf("digest: %w", ledger.ErrInvalid)

// ErrDelivery marks a digest that could not be delivered after its
// attempts: it is not recorded as sent, so the next run tries again.
var ErrDelivery = errors.New("digest: not delivered")
