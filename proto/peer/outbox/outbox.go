package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/client"
	"github.com/ingot-hpc/ingot/proto/peer"
	"github.com/ingot-hpc/ingot/proto/peer/link"
)

// paths are the peer's endpoints of each operation.
var paths = map[peer.Op]string{
	peer.OpDeposit:  api.PathExchangeDeposits,
	peer.OpUsage:    api.PathExchangeUsage,
	peer.OpLien:     api.PathExchangeLiens,
	peer.OpCharge:   api.PathExchangeCharges,
	peer.OpRelease:  api.PathExchangeReleases,
	peer.OpRefund:   api.PathExchangeRefunds,
	peer.OpWithdraw: api.PathExchangeWithdrawals,
}

// Outbox sends the pending transactions of a bank's peers.
type Outbox struct {
	Peers *peer.Registry
	Log   *slog.Logger
	// Interval is the pause between two readings of the pending
	// transactions when there is nothing to send (default 200 ms);
	// Timeout bounds one sending (default 10 s).
	Interval, Timeout time.Duration
	// Pause is the first pause before a peer is tried again after a
	// failure (default 1 s), doubled at each failure up to a minute.
	Pause time.Duration
	// ReportPeriod is the length of the periods whose usage is reported
	// to the peers that granted allocations here (peer.ReportDue;
	// default peer.DefaultReportPeriod, a UTC day).
	ReportPeriod time.Duration

	// next is when each peer may be tried again after a failure, and
	// pause the pause after its next failure; mu guards them, as each
	// peer's transactions are sent by a goroutine of their own.
	mu    sync.Mutex
	next  map[string]time.Time
	pause map[string]time.Duration
}

// maxPause is the longest pause between two tries of an unreachable peer.
const maxPause = time.Minute

// defaultTimeout bounds one sending when the caller gives no timeout.
const defaultTimeout = 10 * time.Second

// Run sends until ctx ends.
func (o *Outbox) Run(ctx context.Context) {
	interval := o.Interval
	if interval == 0 {
		interval = 200 * time.Millisecond
	}
	every := cmp.Or(o.ReportPeriod, peer.DefaultReportPeriod)
	var due time.Time
	for {
		if now := time.Now(); !now.Before(due) {
			o.report(ctx, every)
			due = now.Truncate(every).Add(every)
			if soon := now.Add(reportEvery); soon.Before(due) {
				due = soon
			}
		}
		if _, err := o.Drain(ctx); err != nil && ctx.Err() == nil {
			o.Log.Warn("peer outbox", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			// What is kept to journal is journaled as the server stops.
			if err := o.Peers.RecordAnswers(context.WithoutCancel(ctx)); err != nil {
				o.Log.Warn("peer outbox", "error", err.Error())
			}
			return
		case <-time.After(interval):
		}
	}
}

// reportEvery is how often the outbox looks for usage reports due
// (peer.ReportDue) at least: it looks too as each period ends.
const reportEvery = time.Minute

// report begins the usage reports due, which Drain then sends.
func (o *Outbox) report(ctx context.Context, every time.Duration) {
	begun, err := o.Peers.ReportDue(ctx, every)
	if err != nil && ctx.Err() == nil {
		o.Log.Warn("peer usage report", "error", err.Error())
	}
	for _, t := range begun {
		o.Log.Info("peer usage report begun", "id", t.ID, "peer", t.Peer, "net", t.Amount.String())
	}
}

// Drain sends each pending transaction whose peer is not in a pause, once,
// and says how many are still pending. Each peer's transactions are sent
// in order, by a goroutine of their own, so that a peer that does not
// answer (a send waits up to Timeout) holds up no other peer's.
func (o *Outbox) Drain(ctx context.Context) (pending int, err error) {
	if err := o.Peers.RecordAnswers(ctx); err != nil {
		return 0, err
	}
	txs, err := o.Peers.Transactions(ctx, true)
	if err != nil {
		return 0, err
	}
	byPeer := map[string][]peer.Transaction{}
	for _, t := range txs {
		byPeer[t.Peer] = append(byPeer[t.Peer], t)
	}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for name, list := range byPeer {
		wg.Go(func() {
			n := o.drainPeer(ctx, name, list)
			mu.Lock()
			pending += n
			mu.Unlock()
		})
	}
	wg.Wait()
	return pending, nil
}

// drainPeer sends one peer's pending transactions, in order, unless the
// peer is in a pause; the first failure pauses it and leaves the rest for
// later. It says how many are still pending.
func (o *Outbox) drainPeer(ctx context.Context, name string, txs []peer.Transaction) (pending int) {
	if o.paused(name) {
		return len(txs)
	}
	c, err := link.Open(ctx, o.Peers, name)
	if err != nil {
		o.failed(name, err)
		return len(txs)
	}
	for i, t := range txs {
		settled, err := o.send(ctx, c, t)
		switch {
		case err != nil:
			o.failed(name, err)
			return pending + len(txs) - i
		case !settled:
			pending++
		default:
			o.answered(name)
		}
	}
	return pending
}

// send sends one transaction and records the peer's answer; settled says
// whether it did.
func (o *Outbox) send(ctx context.Context, c *client.Client, t peer.Transaction) (settled bool, err error) {
	t, err = Send(ctx, o.Peers, c, t, o.Timeout)
	if err != nil || t.State == peer.StatePending {
		return false, err
	}
	o.Log.Info("peer transaction", "id", t.ID, "peer", t.Peer, "op", string(t.Op), "state", string(t.State))
	return true, nil
}

// Send sends a pending transaction to its peer once, waiting at most
// timeout (0: 10 s), and records the peer's answer: the transaction done,
// or refused when the refusal is final. An error (the peer unreachable,
// or not answering for good) leaves it pending, for the outbox to send
// again.
func Send(ctx context.Context, peers *peer.Registry, c *client.Client, t peer.Transaction, timeout time.Duration) (peer.Transaction, error) {
	return send(ctx, peers, c, t, timeout, false)
}

// send is Send; forwarded says Forward calls it, on a transaction it has
// just begun or read. Forwarded, it does not read the transaction again
// before sending: another sender (the outbox) may have had its answer
// meanwhile, and then the peer gives the same answer again, which is
// recorded once. And it keeps a done answer to be journaled with the
// next change (peer.Registry.Answered) instead of journaling it now: the
// peer keeps a done transaction's answer, so if this bank stops before
// journaling it, a sending again gets it. A refusal is journaled now,
// so that no one sends it again (the peer gives it again if one does).
func send(ctx context.Context, peers *peer.Registry, c *client.Client, t peer.Transaction, timeout time.Duration, forwarded bool) (peer.Transaction, error) {
	t, release, err := claim(ctx, peers, t, !forwarded)
	if err != nil || t.State != peer.StatePending {
		return t, err
	}
	defer release()
	state, answer, err := exchange(ctx, c, t, timeout)
	switch _, answered := errors.AsType[*api.Error](err); {
	case err == nil || answered || errors.Is(err, peer.ErrBadAnswer):
		peers.Reached(t.Peer) // it answered, if not for good
	case ctx.Err() == nil: // else the caller gave up: that says nothing of the peer
		peers.Unreachable(t.Peer)
	}
	if err != nil {
		return t, err
	}
	if forwarded && state == peer.StateDone {
		return peers.Answered(t, state, answer), nil
	}
	settled, err := peers.Settle(ctx, t.ID, state, answer)
	if err != nil {
		return t, fmt.Errorf("transaction %s: record the answer: %w", t.ID, err)
	}
	return settled, nil
}

// exchange sends a transaction once and says how the peer answered: done,
// or refused for good; an error when it did not answer for good.
func exchange(ctx context.Context, c *client.Client, t peer.Transaction, timeout time.Duration) (peer.State, json.RawMessage, error) {
	path, ok := paths[t.Op]
	if !ok {
		return "", nil, fmt.Errorf("transaction %s: unknown operation %q", t.ID, t.Op)
	}
	sendCtx, cancel := context.WithTimeout(ctx, cmp.Or(timeout, defaultTimeout))
	answer, err := c.Exchange(sendCtx, t.ID, path, t.Body)
	cancel()
	if err == nil {
		if err := peer.CheckAnswer(t, answer); err != nil {
			return "", nil, fmt.Errorf("transaction %s: %w", t.ID, err)
		}
		return peer.StateDone, answer, nil
	}
	apiErr, isAPI := errors.AsType[*api.Error](err)
	if !isAPI || !Final(apiErr.Code) {
		return "", nil, fmt.Errorf("transaction %s to %s: %w", t.ID, t.Peer, err)
	}
	answer, err = json.Marshal(apiErr)
	return peer.StateRefused, answer, err
}

// sending holds the transactions being sent from this process, each with
// a channel closed when its sending ends. A forwarded operation (Forward)
// and the outbox may both pick up a transaction still pending. One at a
// time, the second finds the first's answer recorded and sends nothing.
// (Sent twice, it gets the same answer twice: the peer keeps a final
// refusal too, peer.Receive; across servers that is what holds.)
var sending sync.Map

// claim claims the sending of a pending transaction (sendAlone) and, if
// reread, reads it again: another sender may have had the peer's answer
// meanwhile, journaled or kept (peer.Registry.Answered). Only a
// transaction still pending is claimed (release then ends the claim).
func claim(ctx context.Context, peers *peer.Registry, t peer.Transaction, reread bool) (peer.Transaction, func(), error) {
	release, err := sendAlone(ctx, t.ID)
	if err != nil {
		return t, nil, err
	}
	if kept, ok := peers.Kept(t.ID); ok {
		release()
		return kept, nil, nil
	}
	if !reread {
		return t, release, nil
	}
	if t, err = peers.Transaction(ctx, t.ID); err != nil || t.State != peer.StatePending {
		release()
		return t, nil, err
	}
	return t, release, nil
}

// sendAlone waits until no other sending of transaction id is under way
// in this process and claims it; release ends the claim.
func sendAlone(ctx context.Context, id string) (release func(), err error) {
	mine := make(chan struct{})
	for {
		other, busy := sending.LoadOrStore(id, mine)
		if !busy {
			return func() {
				sending.Delete(id)
				close(mine)
			}, nil
		}
		select {
		case <-other.(chan struct{}):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Final says whether a refusal is the peer's last word: not when the peer
// is busy, failing inside, or does not know this bank's key yet (its
// operator may still give it), which may change. The peer keeps a final
// refusal as the transaction's answer (Refusals).
func Final(code api.Code) bool {
	switch code {
	case api.CodeUnavailable, api.CodeTooManyRequests, api.CodeInternal, api.CodeCorrupt, api.CodeUnauthenticated:
		return false
	}
	return true
}

// paused says whether a peer is in a pause after a failure.
func (o *Outbox) paused(name string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return time.Now().Before(o.next[name])
}

// answered ends a peer's pause: it answered.
func (o *Outbox) answered(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.next, name)
	delete(o.pause, name)
}

// failed pauses a peer after a failure, twice as long as the last time.
func (o *Outbox) failed(name string, err error) {
	first := o.Pause
	if first == 0 {
		first = time.Second
	}
	o.mu.Lock()
	if o.next == nil {
		o.next, o.pause = map[string]time.Time{}, map[string]time.Duration{}
	}
	p := min(max(2*o.pause[name], first), maxPause)
	o.pause[name], o.next[name] = p, time.Now().Add(p)
	o.mu.Unlock()
	o.Log.Warn("peer unreachable", "peer", name, "retry_in", p.String(), "error", err.Error())
}

// Forward begins a forwarded operation of a job homed at a peer, once for
// the scheduler's request (peer.Registry.BeginOnce), and sends it at
// once, since the scheduler waits for the home bank's answer: a refusal
// journaled at once, a done one with the next change
// (peer.Registry.Answered). The job's earlier transactions with the peer
// still pending (peer.Registry.Earlier) are sent first, in the order they
// began: a charge sent ahead of the job's lien would be made without it,
// and the lien, arriving after, would hold credits for a job that is
// over. A transaction still pending after it (the peer unreachable, or
// its answer lost) is the outbox's to send again, and a retry of the
// request sends it again too: the peer applies it once, under its id. A
// retry of a request whose transaction was withdrawn sends the withdrawal
// first: once the peer has it, the request begins anew; until then
// Forward returns the transaction withdrawn. local is the operation's
// cost in this bank's credits; timeout bounds each sending (0: 10 s).
//
// While the peer is known away (peer.Registry.Away: a sending to it got
// no answer a second ago or less, or another caller is trying it now),
// nothing is sent, so that a scheduler does not wait out the timeout at
// every job: the operation is begun pending and ErrNotSent returned, or a
// lien the peer's away policy does not accept is refused here, never sent
// (peer.Registry.BeginOnce).
func Forward(ctx context.Context, peers *peer.Registry, links *link.Cache, req ledger.Request, home ledger.Home, op peer.Op, body peer.JobOp, local decimal.Decimal, timeout time.Duration) (peer.Transaction, error) {
	timeout = cmp.Or(timeout, defaultTimeout)
	away, untried := peers.Away(home.Peer, timeout)
	tried := false
	defer func() {
		if !tried {
			untried() // the next caller tries the peer
		}
	}()
	var awayRefusal json.RawMessage
	if away {
		var err error
		if awayRefusal, err = json.Marshal(api.Error{Code: api.CodeUnavailable, Message: awayMessage(home.Peer) + "; its away policy refuses"}); err != nil {
			return peer.Transaction{}, fmt.Errorf("peer: encode a refusal: %w", err)
		}
	}
	t, err := peers.BeginOnce(ctx, req, home, op, body, local, awayRefusal)
	if err != nil || t.State != peer.StatePending && t.State != peer.StateWithdrawn {
		return t, err
	}
	if away {
		return t, fmt.Errorf("%w: %s", ErrNotSent, awayMessage(home.Peer))
	}
	c, err := links.Open(ctx, peers, home.Peer)
	if err != nil {
		return t, err
	}
	// sent sends one transaction; tried says whether a sending has told
	// the registry whether the peer answered.
	sent := func(x peer.Transaction, forwarded bool) (peer.Transaction, error) {
		x, err := send(ctx, peers, c, x, timeout, forwarded)
		tried = tried || ctx.Err() == nil
		return x, err
	}
	if t.State == peer.StateWithdrawn {
		wd, err := peers.Transaction(ctx, t.Withdrawal)
		if err != nil {
			return t, err
		}
		if _, err := sent(wd, false); err != nil {
			return t, err
		}
		if t, err = peers.BeginOnce(ctx, req, home, op, body, local, nil); err != nil || t.State != peer.StatePending {
			return t, err
		}
	}
	earlier, err := peers.Earlier(ctx, t, body)
	if err != nil {
		return t, err
	}
	for _, e := range earlier {
		if _, err := sent(e, false); err != nil {
			return t, err
		}
	}
	return sent(t, true)
}

// ErrNotSent is Forward's error for an operation it did not send, its
// peer known away.
var ErrNotSent = errors.New("not sent")

// awayMessage says why nothing is sent to a peer known away.
func awayMessage(name string) string {
	return fmt.Sprintf("%s did not answer its last sending; it is tried again within %s", name, peer.AwayRetry)
}

// Refusals tells and keeps the final refusals of the transactions a
// peer sends this bank (peer.Receive), as the wire says them.
type Refusals struct{}

// Keep is the wire refusal of err when it is final.
func (Refusals) Keep(err error) (json.RawMessage, bool) {
	if err == nil {
		return nil, false
	}
	refusal := api.FromError(err)
	if !Final(refusal.Code) {
		return nil, false
	}
	answer, jerr := json.Marshal(refusal)
	return answer, jerr == nil
}

// Give is the refusal a kept answer says.
func (Refusals) Give(answer json.RawMessage) error {
	var refusal api.Error
	if err := json.Unmarshal(answer, &refusal); err != nil {
		return fmt.Errorf("%w: a kept refusal: %v", ledger.ErrCorrupt, err)
	}
	return &refusal
}
