package api

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/digest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/schedule"
)

// Paths of the endpoints (see the package documentation). A path that
// lists with GET makes with POST.
const (
	PathHealth              = "/healthz"
	PathSettings            = "/v1/settings"
	PathBalances            = "/v1/balances"
	PathBalance             = "/v1/balance"
	PathAvailable           = "/v1/available"
	PathShares              = "/v1/shares"
	PathPreempt             = "/v1/preempt"
	PathFairShare           = "/v1/fairshare"
	PathForecast            = "/v1/forecast"
	PathSchedules           = "/v1/schedules"
	PathScheduleModify      = "/v1/schedules/modify"
	PathScheduleCancel      = "/v1/schedules/cancel"
	PathUpcoming            = "/v1/schedules/upcoming"
	PathStatement           = "/v1/statement"
	PathJournal             = "/v1/journal"
	PathAudit               = "/v1/audit"
	PathBackup              = "/v1/backup"
	PathNodes               = "/v1/nodes"
	PathNode                = "/v1/node"
	PathAccountNumbers      = "/v1/accounts/numbers"
	PathNodeModify          = "/v1/nodes/modify"
	PathNodeDeactivate      = "/v1/nodes/deactivate"
	PathNodeReactivate      = "/v1/nodes/reactivate"
	PathUsers               = "/v1/users"
	PathUserModify          = "/v1/users/modify"
	PathContacts            = "/v1/contacts"
	PathNotify              = "/v1/notify"
	PathMachines            = "/v1/machines"
	PathMachineModify       = "/v1/machines/modify"
	PathDeposits            = "/v1/deposits"
	PathWithdrawals         = "/v1/withdrawals"
	PathTransfers           = "/v1/transfers"
	PathAllocationModify    = "/v1/allocations/modify"
	PathRates               = "/v1/rates"
	PathConfig              = "/v1/config"
	PathQuotes              = "/v1/quotes"
	PathGuarantees          = "/v1/quotes/guarantee"
	PathLiens               = "/v1/liens"
	PathLien                = "/v1/lien"
	PathExtend              = "/v1/liens/extend"
	PathRelease             = "/v1/liens/release"
	PathLienModify          = "/v1/liens/modify"
	PathSweep               = "/v1/liens/sweep"
	PathCharges             = "/v1/charges"
	PathUsage               = "/v1/usage"
	PathRefunds             = "/v1/refunds"
	PathJobRefunds          = "/v1/refunds/job"
	PathReservations        = "/v1/reservations"
	PathFlush               = "/v1/reservations/flush"
	PathFlushDryRun         = "/v1/reservations/flush/dry-run"
	PathClients             = "/v1/clients"
	PathClientRotate        = "/v1/clients/rotate"
	PathClientRevoke        = "/v1/clients/revoke"
	PathWebLinks            = "/v1/web/links"
	PathPeers               = "/v1/peers"
	PathPeerKey             = "/v1/peers/key"
	PathPeerModify          = "/v1/peers/modify"
	PathPeerRemove          = "/v1/peers/remove"
	PathPeerDeposits        = "/v1/peers/deposits"
	PathPeerTransactions    = "/v1/peers/transactions"
	PathPeerReconcile       = "/v1/peers/reconcile"
	PathPeerStatement       = "/v1/peers/statement"
	PathExchangeDeposits    = "/v1/exchange/deposits"
	PathExchangeTxs         = "/v1/exchange/transactions"
	PathExchangeUsage       = "/v1/exchange/usage"
	PathUsagePeers          = "/v1/usage/peers"
	PathExchangeLiens       = "/v1/exchange/liens"
	PathExchangeCharges     = "/v1/exchange/charges"
	PathExchangeReleases    = "/v1/exchange/releases"
	PathExchangeRefunds     = "/v1/exchange/refunds"
	PathExchangeWithdrawals = "/v1/exchange/withdrawals"
)

// HeaderRequestID carries the request id of a change (see Retries).
const HeaderRequestID = auth.HeaderRequestID

// HeaderPrecision carries the bank's precision (its number of decimal
// places, fixed for its life) on every answer to an authenticated request,
// so that a client prints the amounts of an answer without asking
// /v1/settings first.
const HeaderPrecision = "X-Ingot-Precision"

// MaxBodyBytes is the largest request body the server reads.
const MaxBodyBytes = 1 << 20

// Request bodies. Most are the bank's own specs, so that the wire and the
// bank cannot drift apart; the aliases name them for clients.
type (
	DepositRequest     = ledger.DepositSpec
	WithdrawRequest    = ledger.WithdrawSpec
	TransferRequest    = ledger.TransferSpec
	NodeRequest        = ledger.NodeSpec
	UserRequest        = ledger.UserSpec
	MachineRequest     = ledger.MachineSpec
	RatesRequest       = charge.RateTable
	ConfigRequest      = lien.ConfigChange
	QuoteRequest       = lien.QuoteSpec
	LienRequest        = lien.PlaceSpec
	ChargeRequest      = lien.ChargeSpec
	RefundRequest      = lien.RefundSpec
	JobRefundRequest   = lien.JobRefundSpec
	ReservationRequest = lien.ReservationSpec
	// ReleaseRequest names the job whose lien to release:
	// {"machine": "hpc1", "job_id": "123"}.
	ReleaseRequest = lien.Job
)

// Modify changes the named node, user or machine: {"name": "chem.lab1",
// "change": {...}}, the change's absent fields staying as they are.
type Modify[C any] struct {
	Name   string `json:"name"`
	Change C      `json:"change"`
}

// ContactRequest changes a bank user's contact: {"name": "amy", "change":
// {"email": "amy@example.org", "off": false}}.
type ContactRequest = Modify[digest.ContactChange]

// NotifyRequest asks the server to send the digests due now, or with
// DryRun to say what they would be.
type NotifyRequest struct {
	DryRun bool `json:"dry_run,omitempty"`
}

// ScheduleRequest is a new allocation schedule (schedule.Spec).
type ScheduleRequest = schedule.Spec

// ScheduleModifyRequest changes the periods of a schedule not yet made:
// {"schedule": 1, "change": {"amount": "5000"}}.
type ScheduleModifyRequest struct {
	Schedule uint64          `json:"schedule"`
	Change   schedule.Change `json:"change"`
}

// ScheduleCancelRequest cancels a schedule: {"schedule": 1}.
type ScheduleCancelRequest struct {
	Schedule uint64 `json:"schedule"`
}

// AllocationModifyRequest changes an allocation's terms:
// {"allocation": 2, "change": {"credit_limit": "5000"}}.
type AllocationModifyRequest struct {
	Allocation uint64                  `json:"allocation"`
	Change     ledger.AllocationChange `json:"change"`
}

// NameRequest names what to act on: a node to deactivate or reactivate, a client whose key
// to rotate.
type NameRequest struct {
	Name string `json:"name"`
}

// SweepRequest is the body of a sweep: {}.
type SweepRequest struct{}

// WebLinkRequest is the body of POST /v1/web/links: {}.
type WebLinkRequest struct{}

// GuaranteeRequest makes a guaranteed quote: the quote's fields, until
// when it may be used and by how many jobs. The expiry is a time rather
// than a duration so that a retry sends the same content (GET /v1/settings
// gives the server's clock to count from).
type GuaranteeRequest struct {
	lien.QuoteSpec
	Expires time.Time `json:"expires"`
	Uses    int       `json:"uses"`
}

// ExtendRequest raises the wallclock limit of a job's lien.
type ExtendRequest struct {
	lien.Job
	WallclockLimitSeconds int64 `json:"wallclock_limit_seconds"`
}

// LienModifyRequest moves the end of a job's lien.
type LienModifyRequest struct {
	lien.Job
	End time.Time `json:"end"`
}

// FlushRequest charges a reservation's idle time; End closes it too.
type FlushRequest struct {
	Name               string `json:"name"`
	RunningProcSeconds int64  `json:"running_proc_seconds,omitempty"`
	End                bool   `json:"end,omitempty"`
}

// ClientRequest adds an API client with its first key.
type ClientRequest = clients.Spec

// RevokeRequest ends one key of a client.
type RevokeRequest struct {
	Name  string `json:"name"`
	KeyID string `json:"key_id"`
}

// PeerRequest adds a peer bank: the agreement, and the key file its bank
// made for this one to sign with, if it is known yet (its one line without
// the newline, as in PeerKeyRequest).
type PeerRequest struct {
	peer.Spec
	KeyFile string `json:"key_file,omitempty"`
}

// PeerModifyRequest changes a peer bank: {"name": "central", "change":
// {"when_away": "accept", "credit_line": "500", "add_projects": ["chem.lab"]}}.
type PeerModifyRequest = Modify[peer.Change]

// PeerKeyRequest gives the key file a peer's bank made for this one to
// sign its requests with.
type PeerKeyRequest struct {
	Name    string `json:"name"`
	KeyFile string `json:"key_file"`
}

// NewPeerResponse answers POST /v1/peers: the peer, and the key file line
// of the key its bank signs with, the only time the secret is seen.
type NewPeerResponse struct {
	Peer    peer.Peer `json:"peer"`
	KeyFile string    `json:"key_file"`
}

// Statement answers GET /v1/statement: the account's statement, and what
// peers reported spending of the allocations this bank granted them into
// an account of that name there (package peer).
type Statement struct {
	ledger.Statement
	SpentAtPeers []peer.Spent `json:"spent_at_peers"`
}

// PeerDepositRequest deposits at a peer bank (POST /v1/peers/deposits):
// a transaction begun here, which the outbox sends.
type PeerDepositRequest struct {
	Peer    string             `json:"peer"`
	Deposit ledger.DepositSpec `json:"deposit"`
}

// Queries of the GETs (see EncodeQuery for the tags).
type (
	// NoQuery is the query of a GET that takes no parameters.
	NoQuery struct{}
	// PeerTransactionsQuery lists the transactions with peers; Pending
	// only those not answered yet.
	PeerTransactionsQuery struct {
		Pending bool `query:"pending"`
	}
	// PeerReconcileQuery compares this bank's records of the transactions
	// with a peer that began in [from, to) with the peer's (zero bounds:
	// open).
	PeerReconcileQuery struct {
		Peer string    `query:"peer,required"`
		From time.Time `query:"from"`
		To   time.Time `query:"to"`
	}
	// UsagePeersQuery selects the usage peers reported of the allocations
	// this bank granted them: of the days that begin in [since, until), of
	// the accounts in node's subtree.
	UsagePeersQuery struct {
		Node  string    `query:"node"`
		Since time.Time `query:"since"`
		Until time.Time `query:"until"`
	}
	// PeerStatementQuery is what this bank and a peer did for each other
	// in a period (peer.ParsePeriod).
	PeerStatementQuery struct {
		Peer   string `query:"peer,required"`
		Period string `query:"period,required"`
	}
	// ExchangeQuery is a peer bank's question: the transactions between
	// it and this bank that began in [from, to).
	ExchangeQuery struct {
		From time.Time `query:"from"`
		To   time.Time `query:"to"`
	}
	// BalancesQuery and BalanceQuery ask for balances at At (zero: now);
	// AllUpcoming lists every allocation yet to start or used up, not only
	// the first ledger.UpcomingListed and ledger.UsedUpListed (Gold's
	// allocation query).
	BalancesQuery struct {
		At          time.Time `query:"at"`
		AllUpcoming bool      `query:"all_upcoming"`
	}
	AvailableQuery struct {
		Project string `query:"project,required"`
	}
	BalanceQuery struct {
		Node        string    `query:"node,required"`
		At          time.Time `query:"at"`
		AllUpcoming bool      `query:"all_upcoming"`
	}
	// PreemptQuery asks what to preempt so that a lien of Amount (a
	// decimal, as the bank's amounts) on Project fits, on Machine (any
	// machine when absent).
	PreemptQuery struct {
		Project string `query:"project,required"`
		Amount  string `query:"amount,required"`
		Machine string `query:"machine"`
	}
	// SharesQuery names an account; each with ("chem.lab1=dynamic:0.6",
	// ledger.QuotaChange's text) proposes a quota, and the split is worked
	// out as it would be with them, changing nothing.
	SharesQuery struct {
		Account string   `query:"account,required"`
		With    []string `query:"with"`
	}
	// FairShareQuery: without half_life, usage does not decay.
	FairShareQuery struct {
		Account      string        `query:"account,required"`
		HalfLife     time.Duration `query:"half_life"`
		Compensation float64       `query:"compensation"`
	}
	// ForecastQuery names a node, or none for every node the client reads.
	ForecastQuery struct {
		Node string `query:"node"`
	}
	// UpcomingQuery: the periods of the schedules (of Account, or every
	// one the client reads) that start before Until.
	UpcomingQuery struct {
		Account string    `query:"account"`
		Until   time.Time `query:"until,required"`
	}
	// StatementQuery: the period [from, to).
	StatementQuery struct {
		Account   string    `query:"account,required"`
		From      time.Time `query:"from,required"`
		To        time.Time `query:"to,required"`
		Summarize bool      `query:"summarize"`
	}
	// JournalQuery selects entries as ledger.JournalFilter does.
	JournalQuery struct {
		Node    string    `query:"node"`
		Kinds   []string  `query:"kind"`
		Job     string    `query:"job"`
		Machine string    `query:"machine"`
		Since   time.Time `query:"since"`
		Until   time.Time `query:"until"`
		Limit   int       `query:"limit"`
	}
	// NodesQuery lists the nodes whose names start with under.
	NodesQuery struct {
		Under string `query:"under"`
	}
	// NameQuery names one node.
	NameQuery struct {
		Name string `query:"name,required"`
	}
	// LiensQuery lists the active liens (all with all=true), of a node's
	// AuditQuery asks for a full audit rather than one that starts at the
	// last clean audit's checkpoint.
	AuditQuery struct {
		Full bool `query:"full"`
	}
	// subtree when node is given.
	LiensQuery struct {
		Node string `query:"node"`
		All  bool   `query:"all"`
	}
	// ChargesQuery selects charges: a job's (machine and job_id), or those
	// lien.ChargeFilter picks by node, user, machine and time.
	ChargesQuery struct {
		Machine string    `query:"machine"`
		JobID   string    `query:"job_id"`
		Node    string    `query:"node"`
		User    string    `query:"user"`
		Since   time.Time `query:"since"`
		Until   time.Time `query:"until"`
	}
	// UsageQuery asks for a usage report (lien.Usage) of the charges the
	// filter fields pick: by is a comma-separated list of project, user,
	// machine; period is day, week or month; tz is the IANA zone whose
	// midnights begin the periods (default UTC).
	UsageQuery struct {
		Node    string    `query:"node"`
		User    string    `query:"user"`
		Machine string    `query:"machine"`
		Since   time.Time `query:"since"`
		Until   time.Time `query:"until"`
		By      string    `query:"by"`
		Period  string    `query:"period"`
		TZ      string    `query:"tz"`
	}
	// JobQuery names a job on a machine.
	JobQuery struct {
		Machine string `query:"machine,required"`
		JobID   string `query:"job_id,required"`
	}
)

// HealthResponse answers GET /healthz.
type HealthResponse struct {
	Status string `json:"status"`
}

// Settings answers GET /v1/settings: the bank's fixed settings, when it
// was created, and the server's clock, which the defaults of a period
// ("until now") are taken from.
type Settings struct {
	ledger.Settings
	Created time.Time `json:"created"`
	Now     time.Time `json:"now"`
	// ArchivedBefore is the date before which the bank's entries are in
	// an archive (ingot archive), which the server does not read.
	ArchivedBefore time.Time `json:"archived_before,omitzero"`
}

// List is the answer of an endpoint that lists: {"items": [...]}, never
// null; an object rather than a bare array, so that fields can be added.
type List[T any] struct {
	Items []T `json:"items"`
}

// ListOf returns the list of items, [] rather than null on the wire.
func ListOf[T any](items []T) List[T] {
	if items == nil {
		items = []T{}
	}
	return List[T]{Items: items}
}

// BalancesResponse answers GET /v1/balances: the balances the client may
// read (see the package documentation).
// AccountNumbersResponse answers GET /v1/accounts/numbers: the numbers
// of the accounts the client reads (ledger.NumberAccounts), by name.
type AccountNumbersResponse struct {
	Numbers map[string]uint64 `json:"numbers"`
}

type BalancesResponse struct {
	Balances []ledger.NodeBalance `json:"balances"`
}

// AvailableResponse answers GET /v1/available: what a new lien on the
// project may take now.
type AvailableResponse struct {
	Project   string          `json:"project"`
	Available decimal.Decimal `json:"available"`
}

// NewKeyResponse answers the making of a key (a new client, or a rotation):
// the client, and the key file line "<key id>:<secret>\n", the only time the
// secret is seen.
type NewKeyResponse struct {
	Client  clients.Client `json:"client"`
	KeyFile string         `json:"key_file"`
}

// WebLinkResponse answers POST /v1/web/links: a link that signs a browser
// in to the web page once, as the client that asked, until Expires.
type WebLinkResponse struct {
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
}
