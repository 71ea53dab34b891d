// Package web is the bank's read-only web page, served by `ingot serve`
// beside the API (server.WithPage): for the signed-in client, the balances
// it reads, and for each account or project its balance (Available: what a
// lien would get, with the account's figure beside it where its HFS share
// is less), allocations with their end dates, open liens, usage over time
// as bar charts (per day, week or month; per project or per user) with
// their figures as a table, the account's HFS tree where the client reads
// the account, and downloads as CSV: the usage table, and an account's
// statement for a period.
//
// # What a page shows
//
// Every figure is read through the API's own handlers (server.Server.Call)
// as the client the session signed in as: the page's rights are the API's,
// and its figures are those of `ingot balance`, `ingot usage`, `ingot hfs
// show` and `ingot statement` for that client (a user client: the projects
// its bank user is a member or manager of; a manager: its subtrees; an
// admin: everything). Whatever the API refuses, and whatever does not
// exist, is the same 404 page: by URL or by parameter, a session cannot
// tell another user's project from none. The downloads are written by
// package report, as the command line writes them with --csv.
//
// The pages are html/template, with no script at all: charts are SVG drawn
// on the server, whose bar heights are computed in decimals (a coordinate
// is written with two decimal places; no amount becomes a float). The
// templates and the style sheet are embedded in the binary. Times are
// stored in UTC and shown in the server's local time zone, which each
// page's footer names.
//
// # Signing in
//
// No password is asked for or kept. `ingot web-login`, authenticated as
// every command is (a key, MUNGE, or the server's Unix socket), asks POST
// /v1/web/links for a link: Sessions.MakeLink records the client that
// asked (its name, role and scope) against a random 256-bit token and
// answers BASE/signin?token=TOKEN. The link lasts LinkLifetime (five
// minutes) and works once.
//
// Opening it (GET) shows a page with a Sign in button, naming the client
// it signs in as, and uses nothing: a program that fetches links to
// preview them does not spend the link.
// The button POSTs the token; the link is then used up, whatever follows,
// and the browser gets the session's cookie: a new random 256-bit token,
// HttpOnly, SameSite=Strict, Path=/, Secure when the page is served over
// TLS or the base URL is https (behind a proxy that ends TLS), then named
// with the prefix __Host- (see Forms and CSRF), and expiring
// with the session after SessionLifetime (eight hours from sign-in; use
// does not extend it). Sign out (a POST) ends the session on the server and
// clears the cookie. A page asked for without a live session is redirected
// to the sign-in page, which says to run `ingot web-login`; the sign-in
// page and the style sheet are the only paths served without a session.
//
// Tokens are kept only as their SHA-256 digests and found by digest, so
// the time a lookup takes says nothing of a token; a token is taken only in
// the one form newToken writes (base64url without padding, 43 characters),
// and the forms' tokens are compared in constant time.
//
// # Forms and CSRF
//
// The page's forms that POST are sign-in, sign-out and a manager's
// (members, a transfer, a project's quota). Each carries a CSRF token: the
// sign-out form and a manager's the session's own, kept with it on the
// server and checked against the session of the request's cookie; the
// sign-in form the link's own, made with the link and kept with it, which
// the link's page also sets in a cookie that only this site's pages send
// (double submit). The sign-in form signs in only with both equal to its
// link's token, so another site cannot post its maker's link here and sign
// a browser in as someone else, and neither can a form and cookie made up
// to match, or those of another link's page. SameSite=Strict keeps the
// cookies out of any request another site's page makes. Where the cookies
// are Secure their names have the prefix __Host-, which browsers take only
// from this very host over TLS: a sibling host (same-site, so SameSite
// does not stop it) cannot set them for the whole domain, neither the
// sign-in form's cookie nor a session of its own. The other forms (the
// statement's period, the usage's range, a quota's preview) are GETs that
// read.
//
// # Headers
//
// Every answer has Content-Security-Policy "default-src 'self'; script-src
// 'none'; ..., frame-ancestors 'none'", X-Content-Type-Options nosniff,
// Referrer-Policy no-referrer (a sign-in link never leaves in a Referer),
// X-Frame-Options DENY and Cache-Control no-store.
//
// # Where sessions live
//
// In the memory of the `ingot serve` process that made the link, not in
// the bank: a link is a login, not a change of the bank, and the journal
// is for changes; sessions in memory need no schema, no sweeping of a
// table and no write per page. The price: a restart of the server signs
// everyone out (run `ingot web-login` again), and with several `ingot
// serve` processes on one PostgreSQL bank a link must be opened on the
// server that made it, and its session lives there only (a load balancer
// in front of them must keep a browser on one server).
//
// # Limits
//
// The links and sessions are tables one client could grow, so each has a
// share per client (by the client's name): at most LinksPerClient links of
// one client wait to be opened (beyond, its new link is refused with 429
// too_many_requests until one is used or expires), and at most
// SessionsPerClient sessions of one client live (a sign-in beyond ends
// that client's oldest session). The server keeps at most 10,000 of each,
// 500 clients' shares, a bound on its memory: beyond, new ones are refused
// (503 unavailable) until some expire.
//
// A session keeps the client as it was when the link was made: revoking
// that client's key does not end it (it ends within eight hours, or when
// the server restarts); a user client's reach follows its bank user at
// each page, so a removed membership or an inactive user takes effect at
// once.
package web
