package munge

import "errors"

// Sentinel errors. The HTTP layer answers 401 for ErrMalformed,
// ErrCredential and ErrMismatch, and 503 for ErrUnavailable: the server, not
// the client, cannot check credentials for now.
var (
	// ErrMalformed marks an Authorization header that is not
	// "MUNGE MUNGE:<base64>:".
	ErrMalformed = errors.New("munge: malformed MUNGE Authorization header")
	// ErrCredential marks a credential that unmunge refuses: invalid,
	// expired, rewound (made in the future), replayed (decoded before), or
	// made for another realm or another decoding user.
	ErrCredential = errors.New("munge: credential refused")
	// ErrMismatch marks a valid credential whose payload is not that of the
	// request it came with: a credential made for another method, path,
	// query, date or body, or not by ingot.
	ErrMismatch = errors.New("munge: credential does not match the request")
	// ErrUnavailable marks munge or unmunge failing to run: not installed,
	// munged not answering, a timeout.
	ErrUnavailable = errors.New("munge: cannot run MUNGE")
)
