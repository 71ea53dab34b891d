package api

import (
	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// Paths of the endpoints (see the package documentation).
const (
	PathHealth    = "/healthz"
	PathBalances  = "/v1/balances"
	PathBalance   = "/v1/balance"
	PathAvailable = "/v1/available"
	PathDeposits  = "/v1/deposits"
	PathTransfers = "/v1/transfers"
	PathQuotes    = "/v1/quotes"
	PathLiens     = "/v1/liens"
	PathRelease   = "/v1/liens/release"
	PathCharges   = "/v1/charges"
)

// HeaderRequestID carries the request id of a change (see Retries).
const HeaderRequestID = "X-Ingot-Request-Id"

// MaxBodyBytes is the largest request body the server reads.
const MaxBodyBytes = 1 << 20

// Request bodies. They are the bank's own specs, so that the wire and the
// bank cannot drift apart; the aliases name them for clients.
type (
	DepositRequest  = ledger.DepositSpec
	TransferRequest = ledger.TransferSpec
	QuoteRequest    = lien.QuoteSpec
	LienRequest     = lien.PlaceSpec
	ChargeRequest   = lien.ChargeSpec
	// ReleaseRequest names the job whose lien to release:
	// {"machine": "hpc1", "job_id": "123"}.
	ReleaseRequest = lien.Job
)

// HealthResponse answers GET /healthz.
type HealthResponse struct {
	Status string `json:"status"`
}

// BalancesResponse answers GET /v1/balances: every node's balance now.
type BalancesResponse struct {
	Balances []ledger.NodeBalance `json:"balances"`
}

// AvailableResponse answers GET /v1/available: what a new lien on the
// project may take now.
type AvailableResponse struct {
	Project   string          `json:"project"`
	Available decimal.Decimal `json:"available"`
}
