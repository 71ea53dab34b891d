package api

import (
	"context"
	"fmt"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// Caller runs an endpoint in process for a client that another protocol
// or page authenticated (server.Server.Call: Gold's listener and the web
// page use it). in is the endpoint's query or body; the answer is the
// endpoint's own Go value, of the type the table above names.
type Caller interface {
	Call(ctx context.Context, client clients.Client, req ledger.Request, method, path string, in any) (any, error)
}

// CallAs asks an endpoint through c and returns its answer as T, the
// type the endpoint answers with. A read ignores req; a change is made
// under it.
func CallAs[T any](ctx context.Context, c Caller, client clients.Client, req ledger.Request, method, path string, in any) (T, error) {
	var zero T
	out, err := c.Call(ctx, client, req, method, path, in)
	if err != nil {
		return zero, err
	}
	v, ok := out.(T)
	if !ok {
		return zero, fmt.Errorf("api: %s %s answered a %T, not a %T", method, path, out, zero)
	}
	return v, nil
}
