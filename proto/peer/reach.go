package peer

import (
	"cmp"
	"sync"
	"time"
)

// reach is what this process knows of which peers answer: a peer whose
// last sending got no answer (Unreachable: no connection, or none in
// time) is away until one gets an answer, any answer (Reached), and is
// tried again now and then meanwhile (Away).
// It is memory, not ledger: a bank restarted tries every peer at once.
type reach struct {
	mu sync.Mutex
	// due is, for each peer away, when it may be tried next.
	due map[string]time.Time
	// retry is the wait after a sending got no answer (0: AwayRetry).
	retry time.Duration
}

// AwayRetry is how long after a peer's sending got no answer the next
// operation forwarded to it is sent, to try it again (unless SetAwayRetry
// says otherwise); those forwarded meanwhile are not sent (Away). A
// second: the home bank back, jobs are forwarded to it again within about
// a second, and while it is away, a scheduler waits on it once a second
// at most, not at every job.
const AwayRetry = time.Second

// Away says whether an operation forwarded to peer name now should not be
// sent, the peer being known away: a sending to it got no answer, and no
// new try is due. When one is due, the caller asking is told false, to
// send and so try the peer, and the others are still told true for up to
// probe (the try's timeout) and the retry more, so that one caller at a
// time waits on a peer that does not answer. untried gives the try back
// to the next caller: the caller calls it if it ends without a sending
// that told Reached or Unreachable (a retry answered already, a caller
// that gave up).
func (r *Registry) Away(name string, probe time.Duration) (away bool, untried func()) {
	r.reach.mu.Lock()
	defer r.reach.mu.Unlock()
	due, known := r.reach.due[name]
	now := time.Now()
	switch {
	case !known:
		return false, func() {}
	case now.Before(due):
		return true, func() {}
	}
	claimed := now.Add(probe + r.reach.wait())
	r.reach.due[name] = claimed
	return false, func() {
		r.reach.mu.Lock()
		defer r.reach.mu.Unlock()
		if d, ok := r.reach.due[name]; ok && d.Equal(claimed) {
			r.reach.due[name] = time.Now()
		}
	}
}

// SetAwayRetry sets how long after a peer's sending got no answer the
// next operation forwarded to it tries it again (0: AwayRetry).
func (r *Registry) SetAwayRetry(d time.Duration) {
	r.reach.mu.Lock()
	defer r.reach.mu.Unlock()
	r.reach.retry = d
}

func (r *reach) wait() time.Duration { return cmp.Or(r.retry, AwayRetry) }

// Unreachable records that a sending to peer name got no answer.
func (r *Registry) Unreachable(name string) {
	r.reach.mu.Lock()
	defer r.reach.mu.Unlock()
	if r.reach.due == nil {
		r.reach.due = map[string]time.Time{}
	}
	r.reach.due[name] = time.Now().Add(r.reach.wait())
}

// Reached records that peer name answered a sending.
func (r *Registry) Reached(name string) {
	r.reach.mu.Lock()
	defer r.reach.mu.Unlock()
	delete(r.reach.due, name)
}
