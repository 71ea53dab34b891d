// Package server is ingot's HTTP API: the handlers of the endpoints listed
// in package api, behind the checks every /v1 request passes, in order:
//
//  1. the route: an unknown path is 404 unknown_endpoint, a known path with
//     another method 405 method_not_allowed;
//  2. the body, read whole (the signature covers it) up to api.MaxBodyBytes:
//     beyond, 413 too_large;
//  3. who sent it: by the Authorization header's scheme, an HMAC signature
//     (auth.Verifier) or a MUNGE credential (munge.Verifier, with
//     WithMunge); on the Unix socket (ConnContext), a request without an
//     Authorization header is its peer's uid. 401 unauthenticated, or 503
//     unavailable when the verifier remembers too many nonces or unmunge
//     fails to run;
//  4. the client: the key's (clients.Registry), or for a uid the user
//     client of the bank user named like its local account (local.go says
//     who is admin), and its role: 403 forbidden;
//  5. for a change, the X-Ingot-Request-Id header: 400 missing_request_id;
//  6. the input, strictly: a POST's body as JSON (unknown fields refused),
//     400 bad_json; a GET's query (api.DecodeQuery: unknown, repeated or
//     empty parameters refused), 400 invalid;
//  7. the scope of the client against what the body or query names (a
//     manager's nodes, a scheduler's machines, a user's projects): 403;
//  8. the bank itself, whose errors map to codes by api.FromError.
//
// Steps 6 to 8 are one handler per endpoint, made by endpoint from a
// function of the decoded input. What a client reads is its reach: an
// endpoint that lists filters what the bank returns by it, so that a user
// client never sees another project's records; one that names a node or a
// job outside it is refused (403, naming the node).
//
// A batch (POST /v1/batch) passes checks 1 to 6 as a whole, and 7 and 8
// item by item, each item failing alone with its own error.
//
// A change is made as ledger.Request{Actor: "client:" + name, ID: request
// id}, so a retry gets the first answer. Each request is logged once, as
// JSON, with its method, path, status, duration, client and request id (if
// it has one); never a body, a query or another header.
//
// Another protocol's listener (package gold's, for Gold's SSSRMAP3)
// authenticates its own clients and then asks Server.Call, which runs
// steps 4, 6, 7 and 8 for that client: what it may do, and how, are the
// API's.
//
// With WithPage, the server also serves the web page (package web) at
// every path but /healthz and those under /v1/, logged and counted as the
// API's requests are, and POST /v1/web/links hands a client a one-time
// link to it. The page reads the bank through Server.Call as the client
// that asked for the link: its rights are the API's.
//
// Server.Endpoint names the endpoint of a request from the route table, so
// that metrics (package metrics) label requests by endpoint without a list
// of their own.
package server
