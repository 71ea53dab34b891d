package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// call is one authenticated API request on its way to its handler.
type call struct {
	r      *http.Request
	w      http.ResponseWriter
	body   []byte
	client clients.Client
	// req identifies a change, for the ledger's idempotency.
	req ledger.Request
	// answer is the change's answer as the ledger encoded it, on the
	// routes marked answered.
	answer []byte
}

// maxRequestID bounds the X-Ingot-Request-Id header.
const maxRequestID = 128

// serveAPI answers a /v1 request and returns the client's name ("" if the
// request never got as far as a known client).
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) string {
	c, result, err := s.run(w, r)
	who := ""
	if c != nil {
		who = c.client.Name
		// The bank's precision, for a client to print the answer's amounts
		// with: an authenticated client may read it at /v1/settings.
		w.Header().Set(api.HeaderPrecision, strconv.Itoa(int(s.ledger.Settings().Precision)))
	}
	if err != nil {
		s.writeError(w, r, err)
		return who
	}
	if st, ok := result.(stream); ok {
		s.writeStream(w, r, st)
		return who
	}
	if len(c.answer) > 0 {
		writeAnswer(w, c.answer)
		return who
	}
	writeJSON(w, http.StatusOK, result)
	return who
}

// stream is an answer that is not JSON: it writes its bytes itself.
type stream func(io.Writer) error

// writeStream sends a stream's bytes. Once they have begun, an error can
// no longer be answered: the connection is cut (http.ErrAbortHandler), so
// that the client sees a broken transfer rather than a short one.
func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, st stream) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if err := st(w); err != nil {
		s.log.Error("answer cut short", "method", r.Method, "path", r.URL.Path, "error", err.Error())
		panic(http.ErrAbortHandler)
	}
}

// run passes the request through the checks of the package documentation
// and, if it passes, its handler.
func (s *Server) run(w http.ResponseWriter, r *http.Request) (*call, any, error) {
	rt, err := s.route(r)
	if err != nil {
		return nil, nil, err
	}
	c, err := s.authenticate(w, r)
	if err != nil {
		return nil, nil, err
	}
	if err := rt.allows(c.client, r); err != nil {
		return c, nil, err
	}
	if rt.changes {
		if c.req, err = requestOf(r, c.client); err != nil {
			return c, nil, err
		}
	}
	if rt.answered {
		c.req.Answer = &c.answer
	}
	result, err := rt.handle(c)
	return c, result, err
}

// route finds the endpoint of a request.
func (s *Server) route(r *http.Request) (route, error) {
	rts, ok := s.routes[r.URL.Path]
	if !ok {
		return route{}, api.Errorf(api.CodeUnknownEndpoint, "no endpoint %s (the endpoints are listed in the documentation of package proto/api)", r.URL.Path)
	}
	methods := make([]string, len(rts))
	for i, rt := range rts {
		if rt.method == r.Method {
			return rt, nil
		}
		methods[i] = rt.method
	}
	return route{}, methodNotAllowed(r, methods)
}

// authenticate reads the body and finds the client the request acts as.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*call, error) {
	body, err := readBody(w, r)
	if err != nil {
		return nil, err
	}
	client, err := s.identify(r.Context(), r, body)
	if err != nil {
		return nil, err // api.FromError maps auth's and munge's sentinels to 401 or 503
	}
	return &call{r: r, w: w, body: body, client: client}, nil
}

// keyClient checks an HMAC signature and finds the key's client.
func (s *Server) keyClient(r *http.Request, body []byte) (clients.Client, error) {
	keyID, err := s.verifier.Verify(r, body)
	if err != nil {
		return clients.Client{}, err
	}
	_, client, ok, err := s.clients.Lookup(r.Context(), keyID)
	if err != nil {
		return clients.Client{}, fmt.Errorf("looking up the client of key %s: %w", keyID, err)
	}
	if !ok {
		// Revoked between the signature check and now.
		return clients.Client{}, api.Errorf(api.CodeUnauthenticated, "auth: unknown or revoked key: %q", keyID)
	}
	return client, nil
}

// readBody reads the whole body, up to api.MaxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, api.MaxBodyBytes))
	if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
		return nil, api.Errorf(api.CodeTooLarge, "request body is larger than the limit of %d bytes (1 MiB)", api.MaxBodyBytes).
			With("limit", api.MaxBodyBytes)
	}
	if err != nil {
		return nil, api.Errorf(api.CodeInvalid, "reading the request body: %v", err)
	}
	return body, nil
}

// allows refuses a client whose role may not call the endpoint at all.
func (rt route) allows(c clients.Client, r *http.Request) error {
	if slices.Contains(rt.roles, c.Role) {
		return nil
	}
	roles := make([]string, len(rt.roles))
	for i, role := range rt.roles {
		roles[i] = string(role)
	}
	return api.Errorf(api.CodeForbidden, "client %s (role %s) may not %s %s; allowed roles: %s",
		c.Name, c.Role, r.Method, r.URL.Path, strings.Join(roles, ", ")).With("role", string(c.Role))
}

// requestOf is the ledger request of a change: the client and its request
// id header.
func requestOf(r *http.Request, c clients.Client) (ledger.Request, error) {
	id := r.Header.Get(api.HeaderRequestID)
	if id == "" {
		return ledger.Request{}, api.Errorf(api.CodeMissingRequestID,
			"%s %s changes the bank and needs a %s header (a unique id per change, reused only to retry it)", r.Method, r.URL.Path, api.HeaderRequestID)
	}
	if len(id) > maxRequestID || strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return ledger.Request{}, api.Errorf(api.CodeInvalid, "%s must be 1 to %d printable ASCII characters without spaces", api.HeaderRequestID, maxRequestID)
	}
	return ledger.Request{Actor: "client:" + c.Name, ID: id}, nil
}

// decode decodes the body into v strictly: one JSON value, no unknown
// fields, so that a misspelt field is refused rather than ignored.
func (c *call) decode(v any) error {
	if len(bytes.TrimSpace(c.body)) == 0 {
		return api.Errorf(api.CodeBadJSON, "request body is empty; want a JSON object")
	}
	if err := api.CheckBody(c.body, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(c.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return api.Errorf(api.CodeBadJSON, "request body: %v", err)
	}
	if len(bytes.Trim(c.body[dec.InputOffset():], jsonSpace)) > 0 {
		return api.Errorf(api.CodeBadJSON, "request body: more than one JSON value")
	}
	return nil
}

// jsonSpace are the bytes JSON's grammar takes as white space (not Go's
// wider bytes.TrimSpace: a form feed after the value is a second value,
// which encoding/json refuses).
const jsonSpace = " \t\r\n"

// input decodes what the client sent into v: the query of a GET (strictly,
// as api.DecodeQuery reads it), the body of any other method (decode).
func (c *call) input(v any) error {
	if c.r.Method == http.MethodGet {
		return api.DecodeQuery(c.r.URL.Path, c.r.URL.Query(), v)
	}
	return c.decode(v)
}

// endpoint makes the handler of an endpoint from a function of its input:
// the call's input is decoded into In, and act checks the client's scope
// and asks the bank.
func endpoint[In, Out any](act func(*call, In) (Out, error)) handler {
	return func(c *call) (any, error) {
		var in In
		if err := c.input(&in); err != nil {
			return nil, err
		}
		return act(c, in)
	}
}

// writeJSON writes v as the JSON answer, with json.Encoder. The status is
// sent first: an encoding error, after which nothing more is written, can
// only be seen in the caller's access log as a short answer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	jsonHeaders(w, status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeAnswer writes an answer the ledger encoded, as writeJSON would
// (json.Encoder ends it with a newline).
func writeAnswer(w http.ResponseWriter, answer []byte) {
	jsonHeaders(w, http.StatusOK)
	_, _ = w.Write(answer)
	_, _ = w.Write([]byte{'\n'})
}

func jsonHeaders(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
}

// writeError writes err as an api.Error (see wireError).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := s.wireError(r, err)
	status := e.Code.Status()
	if allow, ok := e.Details["allow"].(string); ok && e.Code == api.CodeMethodNotAllowed {
		w.Header().Set("Allow", allow)
	}
	writeJSON(w, status, e)
}

// wireError is err as an api.Error; it logs server errors with their cause,
// which the answer does not show.
func (s *Server) wireError(r *http.Request, err error) *api.Error {
	e := api.FromError(err)
	if e.Code.Status() >= 500 && e.Code != api.CodeUnavailable {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err.Error())
	} else if errors.Is(err, ledger.ErrUnavailable) {
		s.log.Warn("the bank's database is unavailable", "method", r.Method, "path", r.URL.Path, "error", err.Error())
	}
	return e
}
