// Package api is the wire format of ingot's HTTP API: the JSON bodies of
// requests and answers, and the errors with their stable codes.
//
// # Endpoints
//
// Every /v1 request is signed as package auth describes (HMAC-SHA256 over
// method, path, query, date, nonce, request id and body), or carries a
// MUNGE credential for it (package munge), or arrives without either on
// the server's Unix socket, whose peer's uid identifies it. A MUNGE or socket request acts as
// a user client of the local account's bank user (the socket's root and
// the server's own uid as admin; see package server). Bodies are JSON, at most
// 1 MiB; unknown fields are refused. GETs take query parameters (the query
// types below, read by DecodeQuery): unknown, repeated or empty ones are
// refused; times are RFC 3339, durations Go's (168h). Every answer is JSON;
// a list is {"items": [...]} (List). A path may have a GET that reads and a
// POST that makes.
//
//		method path                   body / query       answer                  roles
//		GET    /healthz               -                  {"status":"ok"}         no authentication
//		GET    /v1/settings           -                  Settings                all
//		GET    /v1/balances           BalancesQuery      BalancesResponse        all⁴
//		GET    /v1/balance            BalanceQuery       ledger.NodeBalance      all¹²
//		GET    /v1/available          AvailableQuery     AvailableResponse       all¹²
//		GET    /v1/shares             SharesQuery        ledger.AccountShares    all¹² (with: a dry run, changing nothing)
//		GET    /v1/preempt            PreemptQuery       ledger.Preemption       all¹²⁸
//		GET    /v1/fairshare          FairShareQuery     List of FairShareNode   all¹²
//		GET    /v1/forecast           ForecastQuery      List of forecast.Forecast all¹² (a node), all⁴ (none: every node read)
//		GET    /v1/statement          StatementQuery     Statement               admin, manager¹, user²
//		GET    /v1/journal            JournalQuery       List of ledger.Entry    admin, manager¹, user² (node required)
//		GET    /v1/audit              full               ledger.AuditReport      admin
//		GET    /v1/backup             -                  a copy of the bank      admin (application/octet-stream, not JSON)
//		GET    /v1/nodes              NodesQuery         List of ledger.Node     all⁴
//		GET    /v1/node               NameQuery          ledger.Node             all¹²
//		GET    /v1/accounts/numbers   NoQuery            AccountNumbersResponse  all⁴
//		POST   /v1/nodes              NodeRequest        ledger.Node             admin, manager⁵
//		POST   /v1/nodes/modify       Modify[NodeChange] ledger.Node             admin, manager⁵
//		POST   /v1/nodes/deactivate   NameRequest        ledger.Node             admin, manager⁵
//		POST   /v1/nodes/reactivate   NameRequest        ledger.Node             admin, manager⁵
//		GET    /v1/users              -                  List of ledger.User     admin, manager⁴, user (itself)
//		POST   /v1/users              UserRequest        ledger.User             admin
//		POST   /v1/users/modify       Modify[UserChange] ledger.User             admin, manager⁶
//		GET    /v1/contacts           -                  List of digest.Contact  admin, user (itself)
//		POST   /v1/contacts           Modify[ContactChange] digest.Contact       admin, user¹⁰
//		POST   /v1/notify             NotifyRequest      List of digest.Digest   admin (no request id; each digest's record has its own)
//		GET    /v1/machines           -                  List of ledger.Machine  all
//		POST   /v1/machines           MachineRequest     ledger.Machine          admin
//		POST   /v1/machines/modify    Modify[...Change]  ledger.Machine          admin
//		POST   /v1/deposits           DepositRequest     ledger.Receipt          admin, manager¹
//		POST   /v1/withdrawals        WithdrawRequest    ledger.Receipt          admin, manager¹
//		POST   /v1/transfers          TransferRequest    ledger.Receipt          admin, manager¹ (both ends)
//		GET    /v1/schedules          -                  List of schedule.Schedule all⁴ (by account)
//		POST   /v1/schedules          ScheduleRequest    schedule.Schedule       admin, manager¹
//		POST   /v1/schedules/modify   ScheduleModifyRequest schedule.Schedule    admin, manager¹ (its account)
//		POST   /v1/schedules/cancel   ScheduleCancelRequest schedule.Schedule    admin, manager¹ (its account)
//		GET    /v1/schedules/upcoming UpcomingQuery      List of schedule.Period all⁴ (by account)
//		POST   /v1/allocations/modify AllocationModifyRequest ledger.Allocation admin, manager¹ (its account)
//		GET    /v1/rates              -                  charge.RateTable        all
//		POST   /v1/rates              RatesRequest       charge.RateTable        admin
//		GET    /v1/config             -                  lien.Config             admin, scheduler
//		POST   /v1/config             ConfigRequest      lien.Config             admin
//		POST   /v1/quotes             QuoteRequest       lien.QuoteResult        admin, scheduler³
//		GET    /v1/quotes             -                  List of StoredQuote     admin, scheduler⁴
//		POST   /v1/quotes/guarantee   GuaranteeRequest   lien.StoredQuote        admin, scheduler³
//		POST   /v1/liens              LienRequest        lien.LienResult         admin, scheduler³
//		GET    /v1/liens              LiensQuery         List of ledger.Lien     all⁴
//		GET    /v1/lien               JobQuery           ledger.Lien             all⁴
//		POST   /v1/liens/extend       ExtendRequest      lien.LienResult         admin, scheduler³
//		POST   /v1/liens/release      ReleaseRequest     ledger.Lien             admin, scheduler³
//		POST   /v1/liens/modify       LienModifyRequest  ledger.Lien             admin, scheduler³
//		POST   /v1/liens/sweep        SweepRequest ({})  List of ledger.Lien     admin
//		POST   /v1/charges            ChargeRequest      lien.ChargeResult       admin, scheduler³
//		POST   /v1/batch              BatchRequest       BatchResponse           admin, scheduler³ (per item)
//		GET    /v1/charges            ChargesQuery       List of ledger.Charge   all⁴
//		GET    /v1/usage              UsageQuery         List of lien.UsageRow   admin, manager⁴, user⁴
//		GET    /v1/usage/peers        UsagePeersQuery    List of peer.ReceivedUsage all⁴ (the lines of the accounts it reads; none to a scheduler; to an admin asking for every account, the reports of no usage too)
//		POST   /v1/refunds            RefundRequest      ledger.Charge           admin
//		POST   /v1/refunds/job        JobRefundRequest   lien.JobRefund          admin
//		POST   /v1/reservations       ReservationRequest lien.Reservation        admin, scheduler³
//		GET    /v1/reservations       -                  List of Reservation     all⁴
//		POST   /v1/reservations/flush FlushRequest       lien.FlushResult        admin, scheduler³ (the reservation's machine)
//		POST   /v1/reservations/flush/dry-run FlushRequest lien.FlushResult  admin, scheduler³ (the reservation's machine; changes nothing, no request id)
//		GET    /v1/clients            -                  List of clients.Client  admin (no sealed secrets)
//		POST   /v1/clients            ClientRequest      NewKeyResponse          admin
//		POST   /v1/clients/rotate     NameRequest        NewKeyResponse          admin
//		POST   /v1/clients/revoke     RevokeRequest      clients.Client          admin
//		GET    /v1/peers              -                  List of peer.Peer       admin (no sealed secrets)
//		POST   /v1/peers              PeerRequest        NewPeerResponse         admin
//		POST   /v1/peers/key          PeerKeyRequest     peer.Peer               admin
//		POST   /v1/peers/remove       NameRequest        peer.Peer               admin
//		POST   /v1/peers/modify       PeerModifyRequest  peer.Peer               admin
//		POST   /v1/peers/deposits     PeerDepositRequest peer.Transaction        admin (begins it; the outbox sends it)
//		GET    /v1/peers/transactions PeerTransactionsQuery List of peer.Transaction admin
//		GET    /v1/peers/reconcile    PeerReconcileQuery peer.Reconciliation     admin (asks the peer: GET /v1/exchange/transactions)
//		GET    /v1/peers/statement    PeerStatementQuery peer.Statement          admin
//		POST   /v1/exchange/deposits  DepositRequest     ledger.Receipt          peer⁹
//		GET    /v1/exchange/transactions ExchangeQuery   List of peer.Exchanged  peer (its own with this bank, and no other's)
//		POST   /v1/exchange/usage     peer.UsageReport   peer.ReceivedUsage      peer (a period's usage of the allocations this bank granted it)
//		POST   /v1/exchange/liens     peer.JobOp         ledger.Lien             peer⁹ (the lien of a job of a project homed here)
//		POST   /v1/exchange/charges   peer.JobOp         lien.ChargeResult       peer⁹ (its charge)
//		POST   /v1/exchange/releases  peer.JobOp         ledger.Lien             peer⁹ (its lien's release)
//		POST   /v1/exchange/refunds   peer.JobOp         lien.JobRefund          peer⁹ (a refund of its charges)
//		POST   /v1/exchange/withdrawals peer.Withdrawal  peer.Withdrawal         peer (a lien it withdrew: released if applied, else never applied)
//		POST   /v1/web/links          WebLinkRequest ({}) WebLinkResponse        admin, manager, user⁷
//
//	  - ¹ a manager only on the nodes of its scope and their subtrees.
//	  - ² a user client only on nodes its bank user is a member or manager
//	    of, directly or through an ancestor.
//	  - ³ a scheduler only for the machines of its scope.
//	  - ⁴ filtered to what the client reads: nodes as in ¹ and ² (an admin
//	    and a scheduler read every node); the records of jobs (liens,
//	    charges, quotes, reservations) by their project, a scheduler's by its
//	    machines; users: a manager those with a membership in its subtrees.
//	    A job whose records the client does not read is answered as a job
//	    that does not exist (404 not_found): a user learns neither that
//	    another's job exists nor whose it is.
//	    /v1/balances is every account's for an admin or a scheduler, otherwise
//	    the balances of the nodes of a manager's scope or of a user's
//	    memberships.
//	  - ⁵ a manager only on nodes strictly below the nodes of its scope: it
//	    creates, changes, deactivates and reactivates its projects, not the
//	    nodes it was given (their share is decided above them), and no
//	    account.
//	  - ⁶ a manager only adds and removes memberships of nodes in its scope's
//	    subtrees, and moves a user's default project between projects there
//	    (or clears it); a user's description and active state are the
//	    admin's, since a user is shared by every account.
//	  - ⁷ a one-time link that signs a browser in to the web page, whose
//	    session then reads what the client that asked reads (package web);
//	    it changes nothing in the bank, and needs no request id. Only a
//	    server that serves the page has the endpoint.
//	  - ⁹ another bank (a client of role peer, package peer), into an
//	    account its agreement names; the request id is the id of the
//	    transaction its bank began. The peer role may call nothing else.
//	  - ⁸ the jobs to preempt are named in full to an admin and a scheduler
//	    (the scheduler does the preempting, on any machine whose jobs hold
//	    credits the lien can use); a manager or a user sees in full those of
//	    the projects it reads, and of the others only what each holds
//	    (hidden: the job, machine, project and user left out), since those
//	    jobs are not its to read.
//	  - ¹⁰ a user client its own bank user's email address and opt-out
//	    (package digest); a webhook URL, which the server posts to, is the
//	    admin's to set.
//
// Users (but their memberships, ⁶), machines, rates, charge policies,
// refunds, the sweep and clients are the bank manager's (admin): they are
// shared by every account. The
// journal of a non-admin client holds the entries that name a node of the
// subtree asked for or change one of its allocations; the whole journal,
// with every client record, is the admin's. GET /v1/backup streams an
// admin a consistent copy of the bank while it serves (the bbolt file, or
// a SQL script of a bank in PostgreSQL): ingot backup through --server.
//
// # Amounts and text
//
// A body is read strictly before it is decoded (CheckBody). Every decimal
// a request carries is an amount (of a deposit, withdrawal, transfer,
// refund or job refund), a credit limit (of a deposit, or an allocation's
// change), or a value of an HFS policy (quota, limit, non_shared,
// ownership, group_non_shared), and every one is a JSON string in the
// bank's one grammar of decimals, the command line's and Gold's too
// (ledger.ParseDecimal): digits, optionally a point and more digits, such
// as "100", "12.50" or "0.25". A sign, an exponent, a space or a
// separator ("-1", "+1", "1e3", "1,000", ".5") is refused with invalid,
// and so is a bare JSON number, even 100: no amount passes through a
// float, and no two readers of the body read it as different numbers.
// The bank then checks what the field allows: an amount is above zero,
// has at most the bank's precision in decimal places and is at most
// 10^15; a credit limit may be zero; a refund's zero means all that is
// left. No request carries a negative decimal. A rate table (POST
// /v1/rates) is read by charge.DecodeRateTable: its rates and multipliers
// are prices per unit, not amounts, with up to 18 places. Answers write
// decimals as JSON strings too, such as "12.5" (there a balance or a
// change may be negative: "-3.25").
//
// Text is held to the bank's rule for names and descriptions
// (ledger.CheckText), in every string of a body: a control character, a
// format character (Unicode's Cf: the bidirectional overrides and
// isolates such as U+202E, the zero-width characters, the byte order
// mark) or a line or paragraph separator is refused with
// control_character, since the bank's records must read the same in every
// terminal, log and page that shows them. A \u escape of half a UTF-16
// surrogate pair ("\ud800" alone) is refused with invalid_utf8, as bytes
// that are not UTF-8 are: encoding/json would keep U+FFFD in its place.
//
// Every answer to a request whose client the server knows carries the
// header X-Ingot-Precision: the bank's number of decimal places, which
// GET /v1/settings also gives, so that a client formats an answer's amounts
// with no request beyond the one it made.
//
// # Retries
//
// The POSTs that change the bank (all but POST /v1/quotes and
// /v1/web/links) need the header X-Ingot-Request-Id: 1 to 128 printable
// characters without spaces, unique per change. A retry with the same id and the same body returns the first
// answer and changes nothing; the same id with another body is refused
// (request_conflict). Ids are per client. The retry of a lost POST
// /v1/clients or /v1/clients/rotate gets the key the first request made
// (the bank unseals it again). A retry must be signed afresh
// (a new date and nonce): the server accepts each nonce once, so resending
// the very same bytes is refused as a replay.
//
// The request id is part of the signed string (package auth): nobody on
// the path can change it to make the bank apply a change twice or answer it
// with another change's receipt. A captured change sent again is at worst a
// retry of it: the server keeps each change's answer far longer than the
// signature's date window (serve --request-retention has a floor above it),
// so after a restart, when the nonces it remembered are gone, the replay
// still gets the first answer and changes nothing.
//
// # Errors
//
// A refused request gets a 4xx or 5xx status and an Error:
//
//	{"code": "insufficient_funds", "message": "ledger: insufficient funds: ...", "details": {}}
//
// A lien refused for an underfed project when releasing running jobs of
// overfed ones would let it through has details {"preemption":
// ledger.Preemption}: its victims are the liens to release (the bank
// releases none by itself), the same answer as GET /v1/preempt.
//
// Codes are stable and only ever added (see Codes); messages are for people
// and may change. Server errors (5xx other than unavailable) say only that
// the server failed; the server's log has the cause.
package api
