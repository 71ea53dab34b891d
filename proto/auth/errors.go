package auth

import "errors"

// Sentinel errors. Callers test with errors.Is; the wrapped message says
// what exactly was wrong (which header, how far off the date is, the string
// the server signed), so an operator can fix a client from the message alone.
//
// The HTTP layer answers 401 for every error of Verify except
// ErrNonceCacheFull (the server is overloaded: 503) and an error of the key
// lookup itself, which wraps none of these (the store failed: 500).
var (
	// ErrMissing marks a request without an Authorization header, or with one
	// that is not "INGOT-HMAC-SHA256 Credential=<key id>, Signature=<64 hex digits>".
	ErrMissing = errors.New("auth: missing or malformed Authorization header")
	// ErrUnknownKey marks a key id the server does not know, or a revoked key.
	ErrUnknownKey = errors.New("auth: unknown or revoked key")
	// ErrBadSignature marks a signature that does not match the request: a
	// wrong secret, or a request changed after it was signed.
	ErrBadSignature = errors.New("auth: signature does not match the request")
	// ErrOldStringToSign marks a request signed the way before the request
	// id was signed.
	ErrOldStringToSign = errors.New("it was signed without its request id: the string to sign now has the X-Ingot-Request-Id header's value (empty on reads) on a line of its own between the nonce and the body's hash (go doc ./proto/auth)")
	// ErrDate marks an X-Ingot-Date header that is missing, not of the form
	// 2026-11-22T05:00:00Z, or too far from the server's clock.
	ErrDate = errors.New("auth: bad X-Ingot-Date")
	// ErrNonce marks an X-Ingot-Nonce header that is missing or not 32 to 128
	// hex digits.
	ErrNonce = errors.New("auth: bad X-Ingot-Nonce")
	// ErrReplay marks a nonce that was already accepted: a replayed request.
	ErrReplay = errors.New("auth: nonce already used (replayed request)")
	// ErrQuery marks a query string that cannot be canonicalised: a bad
	// percent escape or a ';' separator.
	ErrQuery = errors.New("auth: malformed query string")
	// ErrNonceCacheFull marks a properly signed request refused because the
	// verifier already remembers as many nonces as it may; retry later.
	ErrNonceCacheFull = errors.New("auth: too many recent requests to remember another nonce; retry later")
	// ErrKeyID marks a key id that is not 1 to 64 of A-Z a-z 0-9 . _ -
	// starting with a letter or digit.
	ErrKeyID = errors.New("auth: invalid key id")
	// ErrSecretFileMode marks a key file or server key that its group or
	// others may read or write.
	ErrSecretFileMode = errors.New("auth: secret file readable by others")
	// ErrSecretFileOwner marks a key file, server key or TLS key owned by
	// a user other than the process's (or root).
	ErrSecretFileOwner = errors.New("auth: secret file owned by another user")
	// ErrKeyFile marks a key file that is not one line "<key id>:<secret>".
	ErrKeyFile = errors.New("auth: malformed key file")
)
