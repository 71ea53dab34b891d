// Package munge authenticates requests to ingot's HTTP API with MUNGE, the
// credential service of HPC clusters: a user on a cluster node needs no key
// of their own, since munged vouches for their uid.
//
// A MUNGE credential is made by munge, on any host that shares munged's key,
// and says which uid and gid made it and what payload it carries;
// unmunge decodes it and munged refuses it after its time to live (five
// minutes by default) and the second time it is decoded. This package runs
// the two programs (found on PATH; Command.Socket picks munged's socket with
// their -S option) rather than linking libmunge, so that ingot stays pure Go.
//
// # The scheme
//
// The client makes a credential whose payload binds it to the one request:
//
//	INGOT-MUNGE-1 "\n" METHOD "\n" PATH "\n" QUERY "\n" DATE "\n" hex(SHA-256(body))
//
// METHOD, PATH, QUERY (canonical) and the body's hash are exactly those of
// the HMAC string to sign (see package auth); DATE is the X-Ingot-Date
// header, so the server's ±5 minute window applies as to a signed request.
// There is no nonce line: munged refuses a replayed credential itself. The
// request carries two headers:
//
//	Authorization: MUNGE <the credential as munge prints it, MUNGE:...:>
//	X-Ingot-Date: <UTC RFC 3339, e.g. 2026-11-22T05:00:00Z>
//
// In a shell, for GET /v1/balance?node=chem.lab1 (an empty body):
//
//	date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
//	body_hash=$(sha256sum </dev/null | cut -d' ' -f1)
//	credential=$(printf 'INGOT-MUNGE-1\n%s\n%s\n%s\n%s\n%s' GET /v1/balance node=chem.lab1 \
//		"$date" "$body_hash" | munge)
//	curl -sS -H "Authorization: MUNGE $credential" -H "X-Ingot-Date: $date" \
//		'http://localhost:8080/v1/balance?node=chem.lab1'
//
// (printf with no newline after the hash; the query must already be
// canonical, since it is bound as written.) The same recipe, as a script
// taking a method, path, query and body file, is testdata/request.sh in
// this package's source; the tests run it as the user nobody.
//
// # Checking
//
// Verifier.Verify checks the header's syntax and the date first, then runs
// unmunge (with a timeout), which refuses a credential that is invalid
// (another MUNGE key, a corrupt one), expired, rewound (made in the
// future) or replayed, and finally compares the payload with the request's:
// a credential made for another method, path, query, date or body is
// refused, saying which. It returns the uid of the process that made the
// credential. Mapping the uid to a local account and the account to a bank
// user is the server's job (package server): an unknown uid, or a local
// user who is not an active bank user, is refused there.
//
// # Caveats
//
// A credential proves a uid on any host of the MUNGE realm, so root on any
// node can vouch for any uid: the server gives root nothing special over
// MUNGE (a uid 0 credential is the bank user "root", if there is one, as an
// ordinary user). Anyone who sees a credential before the server decodes
// it can decode it first, using it up, or send it first, with the same
// request (the payload allows no other): use TLS, or the local socket, on
// an untrusted network. munged remembers decoded credentials in memory: a
// restarted munged accepts again a credential it had decoded, until the
// credential expires. The server and the users' nodes need the same MUNGE
// key and clocks within the credential's time to live. Each MUNGE request
// costs the server a run of unmunge, a process of a few milliseconds,
// before it knows who sent it: anyone who can reach the server can make it
// run many, so enable MUNGE where users need it, behind the same rate limits
// as the rest.
package munge
