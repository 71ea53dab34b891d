package schedule

import (
	"fmt"

	"github.com/ingot-hpc/ingot/ledger"
)

// ErrInvalid marks a schedule or change that cannot be, said in full; it
// is a ledger.ErrInvalid, so the CLI and the API answer it as one.
var ErrInvalid = fmt.Errorf("schedule: %w", ledger.ErrInvalid)
