// Package client is the Go client of ingot's HTTP API: what the remote
// command line and the Slurm helpers use.
//
// Every request is signed with a key (package auth; New), or carries a
// fresh MUNGE credential (package munge), or goes to the server's Unix
// socket, where the server knows the caller by their uid (Open and Options
// choose). Every change carries a request id (a random one unless the
// caller gives its own); when the answer is lost (a transport error, or 503
// from a busy server) the client sends the change again, signed afresh (a
// new nonce or credential) but with the same request id, so that the bank
// applies it once and answers the retry with its first answer. Errors from
// the server come back as *api.Error, with the stable code.
//
// There is one method per endpoint of package api, named and typed as the
// bank's own method is (Deposit, PlaceLien, Statement, ...), so that the
// command line's remote bank is a thin layer over it.
package client
