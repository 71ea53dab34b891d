package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/ingot-hpc/ingot/proto/api"
)

// Batch sends many liens, releases and charges in one request (semantics:
// api.BatchRequest) and returns one result per item, in order; an item's
// refusal is its result's Err, not the call's error. Retried like any
// change: a lost answer is asked again with the same request id, and the
// items that succeeded the first time are not applied twice.
func (c *Client) Batch(ctx context.Context, requestID string, items []api.BatchItem) ([]api.BatchResult, error) {
	var r api.BatchResponse
	if err := c.do(ctx, http.MethodPost, api.PathBatch, nil, idOr(requestID), api.BatchRequest{Items: items}, &r); err != nil {
		return nil, err
	}
	if len(r.Results) != len(items) {
		return nil, fmt.Errorf("client: batch of %d items answered with %d results", len(items), len(r.Results))
	}
	return r.Results, nil
}
