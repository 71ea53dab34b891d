package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/ingot-hpc/ingot/digest"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/munge"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/proto/peer/link"
	"github.com/ingot-hpc/ingot/schedule"
)

// Server is the HTTP API of one bank. It is an http.Handler.
type Server struct {
	ledger    *ledger.Ledger
	bank      *lien.Bank
	schedules *schedule.Bank
	contacts  *digest.Contacts
	notifier  *digest.Notifier
	clients   *clients.Registry
	peers     *peer.Registry
	// links are the clients traceback sends to peers with.
	links    link.Cache
	verifier *auth.Verifier
	munge    *munge.Verifier // nil: MUNGE credentials are refused
	page     Page            // nil: no web page, no POST /v1/web/links
	log      *slog.Logger
	observe  Observer // nil: no one is told
	// routes are the endpoints of each path, one per method.
	routes map[string][]route
	audits audits
}

// route is one endpoint: its method and path, the roles that may call it
// at all (each handler then checks the scope), whether it changes the bank
// (and so needs a request id), and its handler.
type route struct {
	method  string
	path    string
	roles   []clients.Role
	changes bool
	// answered: the handler's result is the answer of the bank's one
	// change, whose JSON the ledger has made already (ledger.Request.Answer).
	answered bool
	handle   handler
}

// handler answers an authenticated call; endpoint makes one.
type handler func(*call) (any, error)

// Option configures a Server.
type Option func(*Server)

// WithMunge accepts requests with MUNGE credentials, checked by v: each
// acts as the bank user of the local account of the credential's uid.
func WithMunge(v *munge.Verifier) Option { return func(s *Server) { s.munge = v } }

// Page is a web page served beside the API (package web's Pages): every
// path but /healthz and those under /v1/ is the page's. ServePage answers
// a request, reading the bank through bank (the server's Call) as the
// client the browser signed in as, and returns that client's name for the
// access log ("" if none). Serves reports whether a path is one of the page's, for the
// metrics' endpoint label. MakeLink makes the one-time link that signs a
// browser in as a client.
type Page interface {
	ServePage(w http.ResponseWriter, r *http.Request, bank api.Caller) (client string)
	Serves(path string) bool
	MakeLink(ctx context.Context, c clients.Client) (api.WebLinkResponse, error)
}

// WithPage serves the web page p, and POST /v1/web/links, which asks p for
// a link signing in as the client that sent the request.
func WithPage(p Page) Option { return func(s *Server) { s.page = p } }

// WithNotifier sends the digests an admin asks for (POST /v1/notify) with
// n; without it, the server sends none.
func WithNotifier(n *digest.Notifier) Option { return func(s *Server) { s.notifier = n } }

// Observer is told of every request answered (but a stream cut short):
// its endpoint (see Server.Endpoint), its method as sent, the status
// answered and the time to answer, as the access log has them.
type Observer func(endpoint, method string, status int, d time.Duration)

// WithObserver tells observe of every request answered; the server's
// metrics are such an observer (metrics.Metrics.ObserveRequest). The
// server times and logs each request anyway, so this costs a request less
// than a handler around the server would.
func WithObserver(observe Observer) Option { return func(s *Server) { s.observe = observe } }

// New returns the API of a bank. The verifier's Lookup should be
// KeyLookup(reg), so that keys are the registry's.
func New(l *ledger.Ledger, bank *lien.Bank, reg *clients.Registry, v *auth.Verifier, log *slog.Logger, opts ...Option) *Server {
	s := &Server{ledger: l, bank: bank, schedules: schedule.New(l), contacts: digest.NewContacts(l), clients: reg, peers: peer.New(l, reg), verifier: v, log: log, routes: map[string][]route{}}
	for _, o := range opts {
		o(s)
	}
	for _, rt := range s.table() {
		s.routes[rt.path] = append(s.routes[rt.path], rt)
	}
	return s
}

// KeyLookup is the auth.KeyLookup of a registry's keys.
func KeyLookup(reg *clients.Registry) auth.KeyLookup {
	return reg.Secret
}

const (
	admin     = clients.RoleAdmin
	manager   = clients.RoleManager
	scheduler = clients.RoleScheduler
	user      = clients.RoleUser
)

// Who may call what, before the handlers check the scope (the package
// documentation of api has the table).
var (
	anyRole    = []clients.Role{admin, manager, scheduler, user}
	adminOnly  = []clients.Role{admin}
	managers   = []clients.Role{admin, manager}
	schedulers = []clients.Role{admin, scheduler}
	// readers read the bank's records of nodes; a scheduler has no use for
	// them and is kept out.
	readers = []clients.Role{admin, manager, user}
	// peers are other banks: the exchange's endpoints are theirs alone.
	peers = []clients.Role{clients.RolePeer}
)

// read is an endpoint that changes nothing; change one that does, which
// needs a request id.
func read(method, path string, roles []clients.Role, h handler) route {
	return route{method: method, path: path, roles: roles, handle: h}
}

func change(path string, roles []clients.Role, h handler) route {
	return route{method: http.MethodPost, path: path, roles: roles, changes: true, handle: h}
}

// bankAnswered marks a change whose handler returns the bank change's own
// answer: it is sent as the ledger encoded it. Only the scheduler's
// endpoints, the busiest, and the exchange's that a peer's scheduler
// waits on (traceback) are marked.
func bankAnswered(rt route) route {
	rt.answered = true
	return rt
}

// Peers are the bank's peers as the server keeps them: its outbox sends
// with them, so that it journals the answers the server's traceback keeps.
func (s *Server) Peers() *peer.Registry { return s.peers }

func (s *Server) table() []route {
	get := http.MethodGet
	routes := []route{
		read(get, api.PathSettings, anyRole, endpoint(s.settings)),
		read(get, api.PathBalances, anyRole, endpoint(s.balances)),
		read(get, api.PathBalance, anyRole, endpoint(s.balance)),
		read(get, api.PathAvailable, anyRole, endpoint(s.available)),
		read(get, api.PathShares, anyRole, endpoint(s.shares)),
		read(get, api.PathPreempt, anyRole, endpoint(s.preempt)),
		read(get, api.PathFairShare, anyRole, endpoint(s.fairShare)),
		read(get, api.PathForecast, anyRole, endpoint(s.forecast)),
		read(get, api.PathStatement, readers, endpoint(s.statement)),
		read(get, api.PathJournal, readers, endpoint(s.journal)),
		read(get, api.PathAudit, adminOnly, endpoint(s.audit)),
		read(get, api.PathBackup, adminOnly, endpoint(s.backup)),
		read(get, api.PathNodes, anyRole, endpoint(s.nodes)),
		read(get, api.PathNode, anyRole, endpoint(s.node)),
		read(get, api.PathAccountNumbers, anyRole, endpoint(s.accountNumbers)),
		change(api.PathNodes, managers, endpoint(s.createNode)),
		change(api.PathNodeModify, managers, endpoint(s.modifyNode)),
		change(api.PathNodeDeactivate, managers, endpoint(s.deactivateNode)),
		change(api.PathNodeReactivate, managers, endpoint(s.reactivateNode)),
		read(get, api.PathUsers, readers, endpoint(s.users)),
		change(api.PathUsers, adminOnly, endpoint(s.addUser)),
		change(api.PathUserModify, managers, endpoint(s.modifyUser)),
		read(get, api.PathContacts, []clients.Role{admin, user}, endpoint(s.contactList)),
		change(api.PathContacts, []clients.Role{admin, user}, endpoint(s.setContact)),
		read(http.MethodPost, api.PathNotify, adminOnly, endpoint(s.notify)),
		read(get, api.PathMachines, anyRole, endpoint(s.machines)),
		change(api.PathMachines, adminOnly, endpoint(s.addMachine)),
		change(api.PathMachineModify, adminOnly, endpoint(s.modifyMachine)),
		change(api.PathDeposits, managers, endpoint(s.deposit)),
		change(api.PathWithdrawals, managers, endpoint(s.withdraw)),
		change(api.PathTransfers, managers, endpoint(s.transfer)),
		change(api.PathAllocationModify, managers, endpoint(s.modifyAllocation)),
		read(get, api.PathSchedules, anyRole, endpoint(s.scheduleList)),
		change(api.PathSchedules, managers, endpoint(s.addSchedule)),
		change(api.PathScheduleModify, managers, endpoint(s.modifySchedule)),
		change(api.PathScheduleCancel, managers, endpoint(s.cancelSchedule)),
		read(get, api.PathUpcoming, anyRole, endpoint(s.upcoming)),
		read(get, api.PathRates, anyRole, endpoint(s.rates)),
		change(api.PathRates, adminOnly, endpoint(s.setRates)),
		read(get, api.PathConfig, schedulers, endpoint(s.config)),
		change(api.PathConfig, adminOnly, endpoint(s.changeConfig)),
		read(http.MethodPost, api.PathQuotes, schedulers, endpoint(s.quote)),
		read(get, api.PathQuotes, schedulers, endpoint(s.quotes)),
		change(api.PathGuarantees, schedulers, endpoint(s.guarantee)),
		bankAnswered(change(api.PathLiens, schedulers, endpoint(s.placeLien))),
		read(get, api.PathLiens, anyRole, endpoint(s.liens)),
		read(get, api.PathLien, anyRole, endpoint(s.jobLien)),
		bankAnswered(change(api.PathExtend, schedulers, endpoint(s.extendLien))),
		bankAnswered(change(api.PathRelease, schedulers, endpoint(s.releaseLien))),
		change(api.PathLienModify, schedulers, endpoint(s.modifyLien)),
		change(api.PathSweep, adminOnly, endpoint(s.sweep)),
		bankAnswered(change(api.PathCharges, schedulers, endpoint(s.charge))),
		change(api.PathBatch, schedulers, s.batch),
		read(get, api.PathCharges, anyRole, endpoint(s.charges)),
		read(get, api.PathUsage, readers, endpoint(s.usage)),
		read(get, api.PathUsagePeers, anyRole, endpoint(s.usagePeers)),
		change(api.PathRefunds, adminOnly, endpoint(s.refund)),
		change(api.PathJobRefunds, adminOnly, endpoint(s.refundJob)),
		change(api.PathReservations, schedulers, endpoint(s.addReservation)),
		read(get, api.PathReservations, anyRole, endpoint(s.reservations)),
		change(api.PathFlush, schedulers, endpoint(s.flush)),
		read(http.MethodPost, api.PathFlushDryRun, schedulers, endpoint(s.flushDryRun)),
		read(get, api.PathClients, adminOnly, endpoint(s.clientList)),
		change(api.PathClients, adminOnly, endpoint(s.addClient)),
		change(api.PathClientRotate, adminOnly, endpoint(s.rotateKey)),
		change(api.PathClientRevoke, adminOnly, endpoint(s.revokeKey)),
		read(get, api.PathPeers, adminOnly, endpoint(s.peerList)),
		change(api.PathPeers, adminOnly, endpoint(s.addPeer)),
		change(api.PathPeerKey, adminOnly, endpoint(s.setPeerKey)),
		change(api.PathPeerRemove, adminOnly, endpoint(s.removePeer)),
		change(api.PathPeerModify, adminOnly, endpoint(s.modifyPeer)),
		change(api.PathPeerDeposits, adminOnly, endpoint(s.peerDeposit)),
		read(get, api.PathPeerTransactions, adminOnly, endpoint(s.peerTransactions)),
		read(get, api.PathPeerReconcile, adminOnly, endpoint(s.peerReconcile)),
		read(get, api.PathPeerStatement, adminOnly, endpoint(s.peerStatement)),
		change(api.PathExchangeDeposits, peers, endpoint(s.exchangeDeposit)),
		read(get, api.PathExchangeTxs, peers, endpoint(s.exchangeTransactions)),
		change(api.PathExchangeUsage, peers, endpoint(s.exchangeUsage)),
		bankAnswered(change(api.PathExchangeLiens, peers, endpoint(s.exchangeLien))),
		bankAnswered(change(api.PathExchangeCharges, peers, endpoint(s.exchangeCharge))),
		bankAnswered(change(api.PathExchangeReleases, peers, endpoint(s.exchangeRelease))),
		bankAnswered(change(api.PathExchangeRefunds, peers, endpoint(s.exchangeRefund))),
		change(api.PathExchangeWithdrawals, peers, endpoint(s.exchangeWithdrawal)),
	}
	if s.page != nil {
		// A link changes nothing in the bank, so it needs no request id;
		// it is a POST all the same, as each call makes a new secret.
		routes = append(routes, read(http.MethodPost, api.PathWebLinks, readers, endpoint(s.webLink)))
	}
	return routes
}

// ServeHTTP serves one request, logs it and tells the observer.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	var who string // the client, once known
	switch {
	case r.URL.Path == api.PathHealth:
		s.health(rec, r)
	case s.page != nil && !strings.HasPrefix(r.URL.Path, "/v1/"):
		who = s.page.ServePage(rec, r, s)
	default:
		who = s.serveAPI(rec, r)
	}
	took := time.Since(start)
	if s.observe != nil {
		s.observe(s.Endpoint(r), r.Method, rec.status, took)
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", rec.status),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000),
		slog.String("client", who),
	}
	if id := r.Header.Get(api.HeaderRequestID); id != "" {
		// Cut to the longest valid id: the header is the client's, and a
		// refused request may carry any length.
		attrs = append(attrs, slog.String("request_id", id[:min(len(id), maxRequestID)]))
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// Endpoint is the endpoint a request is for: its path if that is a key of
// the route table, the health check or a path of the page, else "". It is
// the endpoint label of the server's metrics, which a client cannot
// multiply by making up paths.
func (s *Server) Endpoint(r *http.Request) string {
	if _, ok := s.routes[r.URL.Path]; ok || r.URL.Path == api.PathHealth || s.page != nil && s.page.Serves(r.URL.Path) {
		return r.URL.Path
	}
	return ""
}

// recorder remembers the status written, for the access log.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// health answers 200 when the bank answers a read, 503 otherwise.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		s.writeError(w, r, methodNotAllowed(r, []string{http.MethodGet}))
		return
	}
	if err := s.ledger.View(r.Context(), func(ledger.Tx) error { return nil }); err != nil {
		s.writeError(w, r, api.Errorf(api.CodeUnavailable, "the bank does not answer: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, api.HealthResponse{Status: "ok"})
}

func methodNotAllowed(r *http.Request, methods []string) *api.Error {
	allowed := strings.Join(methods, ", ")
	return api.Errorf(api.CodeMethodNotAllowed, "%s %s: method not allowed; use %s", r.Method, r.URL.Path, allowed).
		With("allow", allowed)
}
