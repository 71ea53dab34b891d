// Package api is the wire format of ingot's HTTP API: the JSON bodies of
// requests and answers, and the errors with their stable codes.
//
// # Endpoints
//
// Every /v1 request is signed as package auth describes (HMAC-SHA256 over
// method, path, query, date, nonce and body), or carries a MUNGE credential
// for it (package munge), or arrives without either on the server's Unix
// socket, whose peer's uid identifies it. A MUNGE or socket request acts as
// a user client of the local account's bank user (the socket's root and
// the server's own uid as admin; see package server). Bodies are JSON, at
// most 1 MiB; unknown fields are refused. Every answer is JSON.
//
//	method path                 body / query         answer                 roles
//	GET    /healthz             -                    {"status":"ok"}        no authentication
//	GET    /v1/balances         -                    BalancesResponse       admin
//	GET    /v1/balance          ?node=NAME           ledger.NodeBalance     admin, manager¹, scheduler, user²
//	GET    /v1/available        ?project=NAME        AvailableResponse      admin, manager¹, scheduler, user²
//	POST   /v1/deposits         DepositRequest       ledger.Receipt         admin, manager¹
//	POST   /v1/transfers        TransferRequest      ledger.Receipt         admin, manager¹ (both ends)
//	POST   /v1/quotes           QuoteRequest         lien.QuoteResult       admin, scheduler³
//	POST   /v1/liens            LienRequest          lien.LienResult        admin, scheduler³
//	POST   /v1/liens/release    ReleaseRequest       ledger.Lien            admin, scheduler³
//	POST   /v1/charges          ChargeRequest        lien.ChargeResult      admin, scheduler³
//	POST   /v1/batch            BatchRequest         BatchResponse          admin, scheduler³ (per item)
//
// ¹ a manager only on the nodes of its scope and their subtrees.
// ² a user client only on nodes its bank user is a member or manager of,
// directly or through an ancestor.
// ³ a scheduler only for the machines of its scope.
//
// # Retries
//
// The POSTs that change the bank (all but /v1/quotes) need the header
// X-Ingot-Request-Id: 1 to 128 printable characters without spaces, unique
// per change. A retry with the same id and the same body returns the first
// answer and changes nothing; the same id with another body is refused
// (request_conflict). Ids are per client. A retry must be signed afresh
// (a new date and nonce): the server accepts each nonce once, so resending
// the very same bytes is refused as a replay.
//
// The request id header is not part of the signed string: it only selects
// which earlier answer a retry gets, and the nonce already stops replays.
//
// # Errors
//
// A refused request gets a 4xx or 5xx status and an Error:
//
//	{"code": "insufficient_funds", "message": "ledger: insufficient funds: ...", "details": {}}
//
// Codes are stable and only ever added (see Codes); messages are for people
// and may change. Server errors (5xx other than unavailable) say only that
// the server failed; the server's log has the cause.
package api
