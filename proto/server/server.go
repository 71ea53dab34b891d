package server

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/munge"
)

// Server is the HTTP API of one bank. It is an http.Handler.
type Server struct {
	ledger   *ledger.Ledger
	bank     *lien.Bank
	clients  *clients.Registry
	verifier *auth.Verifier
	munge    *munge.Verifier // nil: MUNGE credentials are refused
	log      *slog.Logger
	routes   map[string]route
}

// route is one endpoint: its method, the roles that may call it at all
// (each handler then checks the scope), whether it changes the bank (and so
// needs a request id), and its handler.
type route struct {
	method  string
	roles   []clients.Role
	changes bool
	handle  func(*call) (any, error)
}

// Option configures a Server.
type Option func(*Server)

// WithMunge accepts requests with MUNGE credentials, checked by v: each
// acts as the bank user of the local account of the credential's uid.
func WithMunge(v *munge.Verifier) Option { return func(s *Server) { s.munge = v } }

// New returns the API of a bank. The verifier's Lookup should be
// KeyLookup(reg), so that keys are the registry's.
func New(l *ledger.Ledger, bank *lien.Bank, reg *clients.Registry, v *auth.Verifier, log *slog.Logger, opts ...Option) *Server {
	s := &Server{ledger: l, bank: bank, clients: reg, verifier: v, log: log}
	for _, o := range opts {
		o(s)
	}
	s.routes = s.table()
	return s
}

// KeyLookup is the auth.KeyLookup of a registry's keys.
func KeyLookup(reg *clients.Registry) auth.KeyLookup {
	return func(id string) ([32]byte, bool, error) {
		secret, _, ok, err := reg.Lookup(id)
		return secret, ok, err
	}
}

const (
	admin     = clients.RoleAdmin
	manager   = clients.RoleManager
	scheduler = clients.RoleScheduler
	user      = clients.RoleUser
)

func (s *Server) table() map[string]route {
	return map[string]route{
		api.PathBalances:  {method: http.MethodGet, roles: []clients.Role{admin}, handle: s.balances},
		api.PathBalance:   {method: http.MethodGet, roles: []clients.Role{admin, manager, scheduler, user}, handle: s.balance},
		api.PathAvailable: {method: http.MethodGet, roles: []clients.Role{admin, manager, scheduler, user}, handle: s.available},
		api.PathDeposits:  {method: http.MethodPost, roles: []clients.Role{admin, manager}, changes: true, handle: s.deposit},
		api.PathTransfers: {method: http.MethodPost, roles: []clients.Role{admin, manager}, changes: true, handle: s.transfer},
		api.PathQuotes:    {method: http.MethodPost, roles: []clients.Role{admin, scheduler}, handle: s.quote},
		api.PathLiens:     {method: http.MethodPost, roles: []clients.Role{admin, scheduler}, changes: true, handle: s.placeLien},
		api.PathRelease:   {method: http.MethodPost, roles: []clients.Role{admin, scheduler}, changes: true, handle: s.releaseLien},
		api.PathCharges:   {method: http.MethodPost, roles: []clients.Role{admin, scheduler}, changes: true, handle: s.charge},
		api.PathBatch:     {method: http.MethodPost, roles: []clients.Role{admin, scheduler}, changes: true, handle: s.batch},
	}
}

// ServeHTTP serves one request and logs it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	var who string // the client, once known
	switch {
	case r.URL.Path == api.PathHealth:
		s.health(rec, r)
	default:
		who = s.serveAPI(rec, r)
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", rec.status),
		slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
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
// the route table or the health check, else "". It is the endpoint label of
// the server's metrics, which a client cannot multiply by making up paths.
func (s *Server) Endpoint(r *http.Request) string {
	if _, ok := s.routes[r.URL.Path]; ok || r.URL.Path == api.PathHealth {
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
		s.writeError(w, r, methodNotAllowed(r, http.MethodGet))
		return
	}
	if err := s.ledger.View(func(ledger.Tx) error { return nil }); err != nil {
		s.writeError(w, r, api.Errorf(api.CodeUnavailable, "the bank does not answer: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, api.HealthResponse{Status: "ok"})
}

func methodNotAllowed(r *http.Request, allowed string) *api.Error {
	return api.Errorf(api.CodeMethodNotAllowed, "%s %s: method not allowed; use %s", r.Method, r.URL.Path, allowed).
		With("allow", allowed)
}
