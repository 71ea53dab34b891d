package gold

import "fmt"

// Code is a status code of a reply, as Gold numbers them: three digits,
// the first the class (0 success, 2 protocol, 3 request, 4 security, 7 the
// bank's state, 9 the server). Gold's clients exit with the code divided by
// ten. Clients switch on codes: never renumber one, only add.
type Code string

// The codes. 444, 900 and 903 are not in the specification: they are the
// codes ingot gives where Gold's server had no better one to copy.
const (
	CodeSuccess        Code = "000"
	CodeMalformed      Code = "242" // framing, XML or envelope: the message cannot be read
	CodeBadObject      Code = "311" // no object, or more than one
	CodeBadAction      Code = "312" // no action
	CodeBadActor       Code = "313" // no actor, or not a plain name
	CodeBadData        Code = "314" // a missing, repeated or malformed field or option
	CodeNotImplemented Code = "315" // the object and action, or a feature a request uses
	CodeSigning        Code = "422" // no signature, or not one that can be checked
	CodeAuthentication Code = "424" // the digest or the signature does not match
	CodeForbidden      Code = "444" // the key's client may not do this (role or scope)
	CodeState          Code = "740" // the bank refuses it as things stand (unknown, inactive, already charged...)
	CodeFunds          Code = "782" // insufficient funds
	CodeInternal       Code = "900" // the server failed; its log has the cause
	CodeUnavailable    Code = "903" // the bank cannot answer now; retry later
)

// Error is a failed request: its code and what to tell the client.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return "gold: " + string(e.Code) + ": " + e.Message }

// Errorf makes an *Error.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
