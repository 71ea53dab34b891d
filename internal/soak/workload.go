package soak

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
)

// How often the background faults happen, per acknowledged change.
const (
	// pDrop: the answer of a change is dropped on its way back (read from
	// the connection, then thrown away), and the client sends the change
	// again with its request id.
	pDrop = 0.02
	// pResend: an acknowledged change is sent again, as a client that
	// never saw its answer would; the answer must be the first one.
	pResend = 0.02
	// pTwice: a change is sent twice at once with one request id (on
	// PostgreSQL, through both servers); both answers must be the same.
	pTwice = 0.01
	// pConflict: an acknowledged change's request id is sent with another
	// body, which the bank must refuse as a conflict.
	pConflict = 0.005
)

// maxPending bounds how long a worker keeps sending one change before
// the soak counts it unanswered: every fault is healed well within it.
const maxPending = 3 * time.Minute

// maxRunning is how many jobs a scheduler worker has running at once.
const maxRunning = 4

// worker is one client of the bank: a scheduler running jobs, an admin
// moving credits, a reader, or a person signing in to the web page.
type worker struct {
	r       *run
	n       int
	role    string // "scheduler", "admin", "reader", "web"
	name    string // its API client's name; the journal's actor is client:<name>
	clients []*client.Client
	tr      *faultyTransport
	skew    atomic.Int64 // what its clock is off by, in ns: the clock jump fault sets it
	rng     *rand.Rand

	done chan struct{} // closed when its loop has ended

	mu   sync.Mutex // guards jobs, read by the checkpoints
	jobs []*job
	next int // the number of its next job
}

// job is a job a scheduler worker runs: its lien is placed, it may be
// charged incrementally, and it ends with a final charge or a release.
type job struct {
	lien.Job
	user         string
	procs        int64
	incrementals int
}

// now is the worker's clock for signatures.
func (w *worker) now() time.Time { return time.Now().Add(time.Duration(w.skew.Load())) }

// newWorker makes a worker with a client of each server, its own
// connections and the soak's faulty transport.
func (r *run) newWorker(n int, role, name string, key auth.Key) *worker {
	w := &worker{r: r, n: n, role: role, name: name, rng: rand.New(rand.NewPCG(r.cfg.Seed, uint64(n)))}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 8
	w.tr = &faultyTransport{base: base, drop: role == "scheduler" || role == "admin", rng: rand.New(rand.NewPCG(r.cfg.Seed, uint64(n)+1<<32)), stats: &r.stats}
	hc := &http.Client{Transport: w.tr, Timeout: 30 * time.Second}
	// Its own server first (workers are spread over the servers), then
	// the others, for the resends that go through another server.
	for i := range r.servers {
		s := r.servers[(n+i)%len(r.servers)]
		c, err := client.New(s.URL, key, client.WithHTTPClient(hc), client.WithClock(w.now), client.WithRetries(5, 20*time.Millisecond))
		if err != nil {
			r.t.Fatal(err)
		}
		w.clients = append(w.clients, c)
	}
	return w
}

// op is one change a worker makes, with its request id.
type op struct {
	kind string // what the table and failures call it
	id   string
	send func(c *client.Client, id string) (any, error)
	// conflict sends the request id with another body.
	conflict func(c *client.Client, id string) error
	// applied updates the soak's model of the bank once the change is
	// acknowledged.
	applied func(answer any)
}

// exec sends op until it is acknowledged, as a scheduler or an admin
// script does: an answer that does not come, or a refusal a fault
// explains, is sent again with the same request id. It reports whether
// op was acknowledged; a refusal nothing explains is a failure of the
// soak, and the op is given up.
func (w *worker) exec(op op) (any, bool) {
	first := time.Now()
	twice := w.rng.Float64() < pTwice
	var answer any
	var err error
	for attempt := 0; ; attempt++ {
		if twice && attempt == 0 {
			answer, err = w.sendTwice(op)
		} else {
			answer, err = op.send(w.clients[0], op.id)
		}
		if err == nil {
			break
		}
		if !w.retryable(op, err) {
			w.r.failf("%s (request %s, client %s) refused: %v", op.kind, op.id, w.name, err)
			return nil, false
		}
		if time.Since(first) > maxPending {
			w.r.failf("%s (request %s, client %s) unanswered for %s: %v", op.kind, op.id, w.name, maxPending, err)
			return nil, false
		}
		pause := min(time.Second, 25*time.Millisecond<<min(attempt, 6))
		time.Sleep(pause/2 + rand.N(pause/2+1))
	}
	w.r.acked(w, op, answer, first)
	if op.applied != nil {
		op.applied(answer)
	}
	if w.rng.Float64() < pResend {
		w.resend(op, answer)
	}
	if op.conflict != nil && w.rng.Float64() < pConflict {
		w.reuse(op)
	}
	return answer, true
}

// retryable says whether a change that got err may be sent again: an
// answer that did not come, a busy server, or a refusal that the fault
// being injected explains. Refusals a fault explains only while it is on
// are counted as failures when it is not, but sent again all the same, so
// that the model of the bank stays whole.
func (w *worker) retryable(op op, err error) bool {
	var e *api.Error
	if !errors.As(err, &e) {
		w.r.stats.countError("no answer (connection)")
		return true
	}
	w.r.stats.countError(string(e.Code))
	switch e.Code {
	case api.CodeUnavailable:
		return true
	case api.CodeInternal, api.CodeUnauthenticated:
		if !w.r.allow.ok(e.Code) {
			w.r.failf("%s (request %s, client %s) answered %s, which no fault explains: %v", op.kind, op.id, w.name, e.Code, err)
		}
		return true
	}
	return false
}

// sendTwice sends op twice at once, through two servers where there are
// two: both answers, when both come, must be the same.
func (w *worker) sendTwice(op op) (any, error) {
	w.r.stats.fault(faultTwice)
	var wg sync.WaitGroup
	var answers [2]any
	var errs [2]error
	for i := range 2 {
		wg.Go(func() { answers[i], errs[i] = op.send(w.clients[i%len(w.clients)], op.id) })
	}
	wg.Wait()
	if errs[0] == nil && errs[1] == nil {
		a, _ := json.Marshal(answers[0])
		b, _ := json.Marshal(answers[1])
		if string(a) != string(b) {
			w.r.failf("%s (request %s) sent twice at once got two answers:\n%s\n%s", op.kind, op.id, a, b)
		}
	}
	for i := range 2 {
		if errs[i] == nil {
			return answers[i], nil
		}
	}
	// Neither answered: a refusal, if either was one, says more.
	if _, ok := errors.AsType[*api.Error](errs[1]); ok {
		return nil, errs[1]
	}
	return nil, errs[0]
}

// resend sends an acknowledged change again, through another server
// where there is one: it must get its first answer.
func (w *worker) resend(op op, first any) {
	w.r.stats.fault(faultResend)
	c := w.clients[len(w.clients)-1]
	for attempt := 0; attempt < 20; attempt++ {
		again, err := op.send(c, op.id)
		if err == nil {
			a, _ := json.Marshal(first)
			b, _ := json.Marshal(again)
			if string(a) != string(b) {
				w.r.failf("%s (request %s) sent again after its answer was answered\n%s\nits first answer was\n%s", op.kind, op.id, b, a)
			}
			return
		}
		if !w.retryable(op, err) {
			w.r.failf("%s (request %s) sent again after its answer was refused: %v", op.kind, op.id, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reuse sends an acknowledged change's request id with another body: the
// bank must refuse it as a conflict, and apply nothing.
func (w *worker) reuse(op op) {
	w.r.stats.fault(faultConflict)
	for attempt := 0; attempt < 20; attempt++ {
		err := op.conflict(w.clients[0], op.id)
		switch {
		case client.IsCode(err, api.CodeRequestConflict):
			return
		case err == nil:
			w.r.failf("%s (request %s): its request id with another body was accepted", op.kind, op.id)
			return
		case !w.retryable(op, err):
			w.r.failf("%s (request %s): its request id with another body was refused as %v, not as a conflict", op.kind, op.id, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// step makes the worker's next request or requests.
func (w *worker) step() {
	switch w.role {
	case "scheduler":
		w.schedulerStep()
	case "admin":
		w.adminStep()
	case "reader":
		w.read()
	case "web":
		w.signIn()
	}
}

// schedulerStep starts a job, or charges or ends one of those running.
func (w *worker) schedulerStep() {
	w.mu.Lock()
	running := len(w.jobs)
	w.mu.Unlock()
	if running < maxRunning && (running == 0 || w.rng.IntN(2) == 0) {
		w.start()
		return
	}
	w.mu.Lock()
	i := w.rng.IntN(len(w.jobs))
	j := w.jobs[i]
	w.mu.Unlock()
	switch {
	case j.incrementals < 2 && w.rng.IntN(4) == 0:
		w.chargeIncrementally(j)
	case w.rng.IntN(7) == 0:
		w.release(j)
	default:
		w.chargeFinally(j)
	}
}

// finish ends every job still running, charging most.
func (w *worker) finish() {
	for {
		w.mu.Lock()
		if len(w.jobs) == 0 {
			w.mu.Unlock()
			return
		}
		j := w.jobs[0]
		w.mu.Unlock()
		var ok bool
		if w.rng.IntN(7) == 0 {
			ok = w.release(j)
		} else {
			ok = w.chargeFinally(j)
		}
		if !ok {
			return // a failure, counted; the job's lien is then no leak of the bank's
		}
	}
}

func (w *worker) start() {
	w.mu.Lock()
	u := users[w.rng.IntN(len(users))]
	j := &job{Job: lien.Job{Machine: machines[w.rng.IntN(len(machines))], ID: fmt.Sprintf("%s-%d", w.name, w.next)},
		user: u.name, procs: 1 + w.rng.Int64N(8)}
	w.next++
	w.mu.Unlock()
	spec := api.LienRequest{Job: j.Job, User: j.user,
		Request: charge.Request{Resources: charge.Resources{Processors: j.procs}, WallclockLimitSeconds: 3600}}
	other := spec
	other.Request.Processors++
	w.exec(op{kind: "lien", id: client.NewRequestID(),
		send: func(c *client.Client, id string) (any, error) { return c.PlaceLien(background, id, spec) },
		conflict: func(c *client.Client, id string) error {
			_, err := c.PlaceLien(background, id, other)
			return err
		},
		applied: func(answer any) {
			w.r.stats.liensPlaced.Add(1)
			w.mu.Lock()
			w.jobs = append(w.jobs, j)
			w.mu.Unlock()
		}})

}

func (w *worker) chargeIncrementally(j *job) bool {
	spec := api.ChargeRequest{Job: j.Job, Incremental: true,
		Usage: charge.Usage{Resources: charge.Resources{Processors: j.procs}, WallclockSeconds: 60, WallclockLimitSeconds: 3600}}
	return w.charge(j, spec, "incremental charge")
}

func (w *worker) chargeFinally(j *job) bool {
	used := 60 + w.rng.Int64N(1800)
	spec := api.ChargeRequest{Job: j.Job,
		Usage: charge.Usage{Resources: charge.Resources{Processors: j.procs}, WallclockSeconds: used, WallclockLimitSeconds: 3600, State: charge.Completed}}
	return w.charge(j, spec, "charge")
}

func (w *worker) charge(j *job, spec api.ChargeRequest, kind string) bool {
	other := spec
	other.Usage.WallclockSeconds++
	_, ok := w.exec(op{kind: kind, id: client.NewRequestID(),
		send: func(c *client.Client, id string) (any, error) { return c.Charge(background, id, spec) },
		conflict: func(c *client.Client, id string) error {
			_, err := c.Charge(background, id, other)
			return err
		},
		applied: func(answer any) {
			res := answer.(lien.ChargeResult)
			w.r.model.add(res.Charge.Account, res.Charge.Amount.Neg())
			if spec.Incremental {
				j.incrementals++
				return
			}
			w.r.stats.liensCharged.Add(1)
			w.r.model.charged(res.Charge)
			w.drop(j)
		}})
	return ok
}

func (w *worker) release(j *job) bool {
	_, ok := w.exec(op{kind: "release", id: client.NewRequestID(),
		send: func(c *client.Client, id string) (any, error) { return c.ReleaseLien(background, id, j.Job) },
		conflict: func(c *client.Client, id string) error {
			other := j.Job
			other.ID += "-other"
			_, err := c.ReleaseLien(background, id, other)
			return err
		},
		applied: func(any) {
			w.r.stats.liensReleased.Add(1)
			w.drop(j)
		}})
	return ok
}

// drop forgets an ended job.
func (w *worker) drop(j *job) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, k := range w.jobs {
		if k == j {
			w.jobs = append(w.jobs[:i], w.jobs[i+1:]...)
			return
		}
	}
}

// adminStep deposits, transfers or refunds.
func (w *worker) adminStep() {
	switch n := w.rng.IntN(10); {
	case n < 5:
		w.deposit()
	case n < 8:
		w.transfer()
	default:
		if !w.refund() {
			w.deposit()
		}
	}
}

// cents is a random amount from 0.01 to max.
func (w *worker) cents(max int64) decimal.Decimal {
	return decimal.New(1+w.rng.Int64N(max*100), -2)
}

func (w *worker) deposit() {
	a := accounts[w.rng.IntN(len(accounts))]
	spec := api.DepositRequest{Account: a, Amount: w.cents(1000), Allocation: w.r.allocations[a]}
	other := spec
	other.Amount = other.Amount.Add(decimal.New(1, -2))
	w.exec(op{kind: "deposit", id: client.NewRequestID(),
		send: func(c *client.Client, id string) (any, error) { return c.Deposit(background, id, spec) },
		conflict: func(c *client.Client, id string) error {
			_, err := c.Deposit(background, id, other)
			return err
		},
		applied: func(any) { w.r.model.add(a, spec.Amount) }})
}

func (w *worker) transfer() {
	i := w.rng.IntN(len(accounts))
	from, to := accounts[i], accounts[(i+1+w.rng.IntN(len(accounts)-1))%len(accounts)]
	spec := api.TransferRequest{From: from, To: to, Amount: w.cents(100)}
	other := spec
	other.Amount = other.Amount.Add(decimal.New(1, -2))
	w.exec(op{kind: "transfer", id: client.NewRequestID(),
		send: func(c *client.Client, id string) (any, error) { return c.Transfer(background, id, spec) },
		conflict: func(c *client.Client, id string) error {
			_, err := c.Transfer(background, id, other)
			return err
		},
		applied: func(any) {
			w.r.model.add(from, spec.Amount.Neg())
			w.r.model.add(to, spec.Amount)
		}})
}

// refund returns part of a final charge made earlier, once; false if
// there is none to refund.
func (w *worker) refund() bool {
	c, ok := w.r.model.toRefund()
	if !ok {
		return false
	}
	amt := c.Amount.Div(decimal.NewFromInt(4)).RoundDown(2)
	if !amt.IsPositive() {
		return false
	}
	spec := api.RefundRequest{Charge: c.ID, Amount: amt, Description: "soak"}
	other := spec
	other.Description = "soak, again"
	w.exec(op{kind: "refund", id: client.NewRequestID(),
		send: func(cl *client.Client, id string) (any, error) { return cl.Refund(background, id, spec) },
		conflict: func(cl *client.Client, id string) error {
			_, err := cl.Refund(background, id, other)
			return err
		},
		applied: func(any) { w.r.model.add(c.Account, amt) }})
	return true
}

// read makes one of the reads users and scripts make.
func (w *worker) read() {
	c := w.clients[0]
	node := readNodes[w.rng.IntN(len(readNodes))]
	var err error
	switch w.rng.IntN(6) {
	case 0:
		_, err = c.Balance(background, node)
	case 1:
		_, err = c.Liens(background, node, false)
	case 2:
		_, err = c.Journal(background, ledger.JournalFilter{Node: node, Limit: 5})
	case 3:
		_, err = c.Available(background, "chem.lab1")
	case 4:
		_, err = c.Usage(background, api.UsageQuery{Node: "chem", By: "project", Since: time.Now().Add(-time.Hour)})
	default:
		_, err = c.Statement(background, "chem", time.Now().Add(-10*time.Minute), time.Now(), true)
	}
	if err == nil {
		w.r.stats.reads.Add(1)
		return
	}
	w.r.stats.readErrors.Add(1)
	if e, ok := errors.AsType[*api.Error](err); ok && e.Code != api.CodeUnavailable && !w.r.allow.ok(e.Code) {
		w.r.failf("a read as %s was refused: %v", w.name, err)
	}
}

// signIn signs in to the web page as a person does with the link `ingot
// web-login` prints: the link's page, its form, then the home page. The
// page answers from the server's memory: a server restarted between the
// link and its use has forgotten the link, which is no failure.
func (w *worker) signIn() {
	c := w.clients[0]
	starts := w.r.starts()
	err := func() error {
		link, err := c.WebLink(background)
		if err != nil {
			return err
		}
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
		page, err := get(hc, link.URL)
		if err != nil {
			return err
		}
		form := url.Values{}
		for _, name := range []string{"token", "csrf"} {
			m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(page)
			if m == nil {
				return fmt.Errorf("no %s in the sign-in page:\n%.2000s", name, page)
			}
			form.Set(name, html.UnescapeString(m[1]))
		}
		base := link.URL[:strings.Index(link.URL, "/signin")]
		resp, err := hc.PostForm(base+"/signin", form) // follows the redirect home
		if err != nil {
			return err
		}
		home, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(home), "chem.lab1") {
			return fmt.Errorf("signed in, the home page answered %s:\n%.2000s", resp.Status, home)
		}
		return nil
	}()
	if err == nil {
		w.r.stats.signIns.Add(1)
		return
	}
	w.r.stats.webErrors.Add(1)
	var e *api.Error
	switch {
	case w.r.starts() != starts:
	case errors.As(err, &e) && (e.Code == api.CodeUnavailable || w.r.allow.ok(e.Code)):
	case !errors.As(err, &e) && w.r.faultOn():
	default:
		w.r.failf("web sign-in as %s: %v", w.name, err)
	}
}

// get reads a page, which must answer 200.
func get(hc *http.Client, target string) (string, error) {
	resp, err := hc.Get(target)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s\n%.2000s", target, resp.Status, body)
	}
	return string(body), err
}

// faultyTransport is the workers' HTTP transport: it times every answer,
// and drops some answers to changes after reading them, as a network that
// fails on the way back does, so that the client sends the change again.
type faultyTransport struct {
	base  http.RoundTripper
	drop  bool
	stats *stats

	mu  sync.Mutex
	rng *rand.Rand
}

// errDropped is the dropped answer's error, as the client sees it.
var errDropped = errors.New("soak: the answer was dropped on its way back")

func (t *faultyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		t.stats.latency(time.Since(start))
	}
	if t.drop && r.Method == http.MethodPost && r.Header.Get(api.HeaderRequestID) != "" && resp.StatusCode == http.StatusOK {
		t.mu.Lock()
		drop := t.rng.Float64() < pDrop
		t.mu.Unlock()
		if drop {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			t.stats.fault(faultDropped)
			return nil, errDropped
		}
	}
	return resp, nil
}
