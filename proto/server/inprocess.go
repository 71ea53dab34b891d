package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// Call runs an endpoint for a client that another protocol authenticated
// (package gold's listener), so that what the client may do and how it is
// done are the API's own: the route's roles, then its handler, which
// checks the scope and asks the bank (steps 4, 6, 7 and 8 of the package
// documentation). in is the endpoint's input, sent as its query for a GET
// (api.EncodeQuery) and as its JSON body otherwise, and decoded as a
// request's is. A change is made as req (its actor and request id); a read
// ignores it. The result is the handler's own, such as a lien.LienResult;
// an error is one the API would answer with (api.FromError reads it).
func (s *Server) Call(ctx context.Context, client clients.Client, req ledger.Request, method, path string, in any) (any, error) {
	r, err := http.NewRequestWithContext(ctx, method, path, nil)
	if err != nil {
		return nil, fmt.Errorf("server: call %s %s: %w", method, path, err)
	}
	c := &call{r: r, w: discard{}, client: client}
	if method == http.MethodGet {
		r.URL.RawQuery = api.EncodeQuery(in).Encode()
	} else if c.body, err = json.Marshal(in); err != nil {
		return nil, fmt.Errorf("server: call %s %s: encode: %w", method, path, err)
	}
	rt, err := s.route(r)
	if err != nil {
		return nil, err
	}
	if err := rt.allows(client, r); err != nil {
		return nil, err
	}
	if rt.changes {
		c.req = req
	}
	return rt.handle(c)
}

// discard is the response writer of a Call: handlers write nothing
// themselves but streams, which no other protocol asks for.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
