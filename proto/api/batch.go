package api

import (
	"strconv"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// PathBatch takes many liens, releases and charges in one request.
const PathBatch = "/v1/batch"

// MaxBatchItems is the most items one batch may hold (a larger batch is
// refused whole with too_large, as is a body over MaxBodyBytes).
const MaxBatchItems = 1000

// BatchRequest is the body of POST /v1/batch: the operations to make, each
// the body of the endpoint it stands for. Its roles are those of those
// endpoints (admin, scheduler), and each item's scope is checked as that
// endpoint checks it: a scheduler's item on another machine is refused
// (forbidden) in its own result, and the other items still run.
//
// The batch answers 200 with one result per item, in the items' order,
// unless the batch as a whole is refused (signature, role, request id,
// JSON, too many items). An item that fails writes nothing.
//
// Items naming the same job run one after another in the order given (so
// that a lien and its charge may share a batch); items of different jobs
// run concurrently, so that their changes share commits.
//
// Retries: item i of a batch whose request id is B is the change with
// request id BatchItemID(B, i), "B#i", made by the same client. A retried
// batch (same id, same items) returns the first answers of the items that
// succeeded and applies none of them twice; items that failed are tried
// again, as a retried single request would be. An item whose content
// differs from the first batch's item at its index is refused with
// request_conflict. The item's change is the very one its endpoint would
// make, so a lien placed as item 0 of batch B and one sent alone to
// /v1/liens with id "B#0" and the same body are one request.
type BatchRequest struct {
	Items []BatchItem `json:"items"`
}

// BatchItem is one operation of a batch: exactly one field is set.
type BatchItem struct {
	Lien    *LienRequest    `json:"lien,omitempty"`    // as POST /v1/liens
	Release *ReleaseRequest `json:"release,omitempty"` // as POST /v1/liens/release
	Charge  *ChargeRequest  `json:"charge,omitempty"`  // as POST /v1/charges
}

// BatchResponse answers POST /v1/batch: Results[i] is the outcome of
// Items[i].
type BatchResponse struct {
	Results []BatchResult `json:"results"`
}

// BatchResult is one item's outcome: the answer of its endpoint, in the
// field named as the item's operation, or its Error.
type BatchResult struct {
	Lien    *lien.LienResult   `json:"lien,omitempty"`
	Release *ledger.Lien       `json:"release,omitempty"`
	Charge  *lien.ChargeResult `json:"charge,omitempty"`
	Error   *Error             `json:"error,omitempty"`
}

// Err is the item's error, or nil if it succeeded.
func (r BatchResult) Err() error {
	if r.Error == nil {
		return nil // not a nil *Error in a non-nil error
	}
	return r.Error
}

// BatchItemID is the request id of item index of the batch with request id
// batchID (see BatchRequest).
func BatchItemID(batchID string, index int) string {
	return batchID + "#" + strconv.Itoa(index)
}
