package multisite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// deposit is a deposit at a site that the central bank acknowledged:
// the request id it was sent under, and the transaction it began.
type deposit struct {
	requestID string
	site      string
	amount    decimal.Decimal
	tx        string
}

// maxOps bounds each depositor's loop, beside the run's time.
const maxOps = 100_000

// maxUnacked is how long a deposit may go unacknowledged, sent again and
// again, before the run fails: longer than any fault lasts.
const maxUnacked = 2 * time.Minute

// load runs the depositors, the sites' jobs and the fault loops for the
// configured time, and returns once the faults have stopped and every
// depositor and site has had its last change acknowledged.
func (r *run) load() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range r.cfg.Depositors {
		rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(i)))
		wg.Go(func() { r.depositor(i, rng, stop) })
	}
	var faults sync.WaitGroup
	faultStop := make(chan struct{})
	faults.Go(func() { r.linkFaults(rand.New(rand.NewPCG(r.cfg.Seed, 1000)), faultStop) })
	faults.Go(func() { r.kills(rand.New(rand.NewPCG(r.cfg.Seed, 1001)), faultStop) })
	for i, site := range sites {
		rng := rand.New(rand.NewPCG(r.cfg.Seed, 2000+uint64(i)))
		wg.Go(func() { r.runJobs(site, rng, stop) })
	}
	time.Sleep(r.cfg.Duration)
	close(faultStop)
	faults.Wait()
	close(stop)
	wg.Wait()
}

// depositor deposits at the sites, one deposit at a time, each sent until
// acknowledged, until stop.
func (r *run) depositor(n int, rng *rand.Rand, stop <-chan struct{}) {
	for i := range maxOps {
		select {
		case <-stop:
			return
		default:
		}
		d := deposit{requestID: client.NewRequestID(), site: sites[rng.IntN(len(sites))],
			amount: decimal.New(1+rng.Int64N(100_000), -2)}
		spec := ledger.DepositSpec{Account: account, Amount: d.amount, Description: fmt.Sprintf("grant %d.%d", n, i)}
		tx, err := untilAcked(func(ctx context.Context) (peer.Transaction, error) {
			return r.banks[central].admin.PeerDeposit(ctx, d.requestID, d.site, spec)
		})
		if err != nil {
			r.t.Errorf("deposit %s at %s (request %s): %v", d.amount, d.site, d.requestID, err)
			return
		}
		d.tx = tx.ID
		r.mu.Lock()
		r.acked = append(r.acked, d)
		r.mu.Unlock()
		// Paced, as operators are, and as make test's share of a machine:
		// about 30 deposits a second in all, which the central bank's
		// outbox, sending one transaction at a time, keeps up with on a
		// busy machine, so that the faults strike transactions as they
		// are sent rather than a backlog.
		time.Sleep(20*time.Millisecond + time.Duration(rng.Int64N(int64(80*time.Millisecond))))
	}
}

// untilAcked sends a change until the bank acknowledges it, as a client's
// retries do: a change that got no answer, or an answer that the faults
// explain (the bank busy, starting again), is sent again under the same
// request id. Any other refusal is returned.
func untilAcked[T any](send func(context.Context) (T, error)) (T, error) {
	deadline := time.Now().Add(maxUnacked)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		v, err := send(ctx)
		cancel()
		if err == nil {
			return v, nil
		}
		if e, ok := errors.AsType[*api.Error](err); ok && !retried(e.Code) {
			return v, err
		}
		if time.Now().After(deadline) {
			return v, fmt.Errorf("unacknowledged for %s: %w", maxUnacked, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// retried says whether a refusal is one a client sends again.
func retried(code api.Code) bool {
	switch code {
	case api.CodeUnavailable, api.CodeTooManyRequests, api.CodeInternal:
		return true
	}
	return false
}
