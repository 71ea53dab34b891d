package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/munge"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// Code is a stable error code on the wire. Clients switch on it; never
// rename or remove one, only add.
type Code string

// Codes is the append-only list of error codes, each with its HTTP status.
// Add new codes at the end.
var Codes = []struct {
	Code   Code
	Status int
}{
	{CodeInvalid, http.StatusBadRequest},
	{CodeNotFound, http.StatusNotFound},
	{CodeExists, http.StatusConflict},
	{CodeInactive, http.StatusConflict},
	{CodeInsufficientFunds, http.StatusConflict},
	{CodeRequestConflict, http.StatusConflict},
	{CodeNoProject, http.StatusConflict},
	{CodeNotMember, http.StatusConflict},
	{CodeAlreadyCharged, http.StatusConflict},
	{CodeRefund, http.StatusConflict},
	{CodeQuoteUnusable, http.StatusConflict},
	{CodeReservationUnusable, http.StatusConflict},
	{CodeUnauthenticated, http.StatusUnauthorized},
	{CodeForbidden, http.StatusForbidden},
	{CodeTooLarge, http.StatusRequestEntityTooLarge},
	{CodeBadJSON, http.StatusBadRequest},
	{CodeMissingRequestID, http.StatusBadRequest},
	{CodeUnknownEndpoint, http.StatusNotFound},
	{CodeMethodNotAllowed, http.StatusMethodNotAllowed},
	{CodeUnavailable, http.StatusServiceUnavailable},
	{CodeCorrupt, http.StatusInternalServerError},
	{CodeInternal, http.StatusInternalServerError},
	{CodeInvalidUTF8, http.StatusBadRequest},
	{CodeDuplicateKey, http.StatusBadRequest},
	{CodeKeySpelling, http.StatusBadRequest},
	{CodeControlCharacter, http.StatusBadRequest},
	{CodeTooManyRequests, http.StatusTooManyRequests},
}

// The codes.
const (
	CodeInvalid             Code = "invalid"            // input that can never succeed; a decimal not in the bank's grammar
	CodeNotFound            Code = "not_found"          // unknown node, user, machine, allocation; no lien for the job
	CodeExists              Code = "exists"             // a name already taken
	CodeInactive            Code = "inactive"           // a deactivated node, user or machine
	CodeInsufficientFunds   Code = "insufficient_funds" // beyond what is available
	CodeRequestConflict     Code = "request_conflict"   // a request id reused with another body
	CodeNoProject           Code = "no_project"         // no project given and the user has no default
	CodeNotMember           Code = "not_member"         // the user may not charge the project
	CodeAlreadyCharged      Code = "already_charged"    // a second final charge of a job
	CodeRefund              Code = "refund_too_large"   // a refund beyond the charge
	CodeQuoteUnusable       Code = "quote_unusable"     // an unknown, expired or used-up guaranteed quote
	CodeReservationUnusable Code = "reservation_unusable"
	CodeUnauthenticated     Code = "unauthenticated" // the signature, credential or their headers are wrong; no such user
	CodeForbidden           Code = "forbidden"       // the client's role or scope does not allow it
	CodeTooLarge            Code = "too_large"       // the body is over MaxBodyBytes, or a batch over MaxBatchItems
	CodeBadJSON             Code = "bad_json"        // the body is not the JSON expected
	CodeMissingRequestID    Code = "missing_request_id"
	CodeUnknownEndpoint     Code = "unknown_endpoint"
	CodeMethodNotAllowed    Code = "method_not_allowed"
	CodeUnavailable         Code = "unavailable" // overloaded or shutting down: retry later
	CodeCorrupt             Code = "corrupt"     // stored data is damaged
	CodeInternal            Code = "internal"
	CodeInvalidUTF8         Code = "invalid_utf8"      // a body that is not valid UTF-8, or escapes half a surrogate pair (CheckBody)
	CodeDuplicateKey        Code = "duplicate_key"     // an object key twice in a body
	CodeKeySpelling         Code = "key_spelling"      // a key spelled otherwise than the wire format
	CodeControlCharacter    Code = "control_character" // a control or format character, or a line separator, in a string of a body (ledger.CheckText)
	// CodeTooManyRequests: the client holds as many of something kept for
	// it in the server's memory as one client may (waiting web sign-in
	// links); other clients are not refused. Retry once some are used or
	// have expired.
	CodeTooManyRequests Code = "too_many_requests"
)

// Status is the HTTP status of a code; 500 for a code not in Codes.
func (c Code) Status() int {
	for _, e := range Codes {
		if e.Code == c {
			return e.Status
		}
	}
	return http.StatusInternalServerError
}

// Error is an error on the wire.
type Error struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// Errorf returns an Error with a formatted message and no details.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Details: map[string]any{}}
}

// With adds a detail and returns e.
func (e *Error) With(key string, value any) *Error {
	e.Details[key] = value
	return e
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// sentinels maps the bank's and auth's sentinel errors to codes, first
// match wins: the order matters where one error wraps several.
var sentinels = []struct {
	err  error
	code Code
}{
	// Lack of funds first: a refused lien whose fallback is missing wraps
	// both, and it is the refusal that matters.
	{ledger.ErrInsufficientFunds, CodeInsufficientFunds},
	{ledger.ErrInvalid, CodeInvalid},
	{ledger.ErrNotFound, CodeNotFound}, // lien.ErrNoLien is one
	{ledger.ErrExists, CodeExists},
	{ledger.ErrInactive, CodeInactive},
	{ledger.ErrRequestConflict, CodeRequestConflict},
	{lien.ErrNoProject, CodeNoProject},
	{lien.ErrNotMember, CodeNotMember},
	{lien.ErrAlreadyCharged, CodeAlreadyCharged},
	{lien.ErrRefund, CodeRefund},
	{lien.ErrQuote, CodeQuoteUnusable},
	{lien.ErrReservation, CodeReservationUnusable},
	{ledger.ErrCorrupt, CodeCorrupt},
	// The bank's database lost or failing over: the client retries the
	// change with its request id, which applies it once.
	{ledger.ErrUnavailable, CodeUnavailable},
	// The server is full of nonces, not the client wrong: before the
	// other auth errors.
	{auth.ErrNonceCacheFull, CodeUnavailable},
	{auth.ErrMissing, CodeUnauthenticated},
	{auth.ErrUnknownKey, CodeUnauthenticated},
	{auth.ErrBadSignature, CodeUnauthenticated},
	{auth.ErrDate, CodeUnauthenticated},
	{auth.ErrNonce, CodeUnauthenticated},
	{auth.ErrReplay, CodeUnauthenticated},
	{auth.ErrQuery, CodeUnauthenticated},
	// A usage report of a grant whose answer the granting bank has not
	// recorded yet: the site sends it again.
	{peer.ErrGrantPending, CodeUnavailable},
	// munged or unmunge failing is the server's trouble: retry later.
	{munge.ErrUnavailable, CodeUnavailable},
	{munge.ErrMalformed, CodeUnauthenticated},
	{munge.ErrCredential, CodeUnauthenticated},
	{munge.ErrMismatch, CodeUnauthenticated},
}

// CodeOf is the code of the first sentinel err wraps, or CodeInternal.
func CodeOf(err error) Code {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return CodeInternal
}

// FromError returns the wire error for err: err itself if it is an *Error,
// the code of the first sentinel it wraps with its message (and, for a
// lien refused with jobs to preempt, the ledger.Preemption as details
// "preemption"), or else CodeInternal. Server errors (5xx but unavailable) and an unavailable
// database get a message that hides the cause, which may name files,
// hosts or internals; log err instead.
func FromError(err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	// A lien refused while preempting named jobs would let it through:
	// the scheduler finds them in the details.
	if pe, ok := errors.AsType[*ledger.PreemptionError](err); ok {
		return Errorf(CodeInsufficientFunds, "%s", err.Error()).With("preemption", pe.Preemption)
	}
	code := CodeOf(err)
	switch {
	case code == CodeInternal:
		return Errorf(code, "internal server error (the server's log has the cause)")
	case code == CodeUnavailable && errors.Is(err, ledger.ErrUnavailable):
		return Errorf(code, "the bank's database is unavailable for now (the server's log has the cause): retry with the same request id")
	case code == CodeCorrupt:
		return Errorf(code, "the bank's stored data is damaged (the server's log has the cause; run ingot audit)")
	}
	return Errorf(code, "%s", err.Error())
}
