package web

import "errors"

var (
	// ErrLinkInvalid is a sign-in link that was used already, has expired,
	// or was never made by this server.
	ErrLinkInvalid = errors.New("web: the sign-in link is not valid: it was used already, has expired, or was made by another server")
	// ErrCSRF is a form posted without the token of the page that showed
	// it (403).
	ErrCSRF = errors.New("web: the form's token does not match: open the page again and send the form from there")
	// ErrBaseURL is a base URL that links cannot start with.
	ErrBaseURL = errors.New("web: bad base URL")
)
