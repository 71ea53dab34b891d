package soak

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ingot-hpc/ingot/internal/ingotproc"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
)

// ackRec is what an acknowledged change's answer says the journal holds
// for it: the entry's kind, and its sequence number, lien or charge.
type ackRec struct {
	kind   ledger.Kind
	seq    uint64
	lien   uint64
	charge uint64
}

// kinds maps an op's kind to its journal entry's.
var kinds = map[string]ledger.Kind{
	"lien": ledger.KindLienPlace, "charge": ledger.KindCharge, "incremental charge": ledger.KindCharge,
	"release": ledger.KindLienRelease, "deposit": ledger.KindDeposit, "transfer": ledger.KindTransfer, "refund": ledger.KindRefund,
}

func recordOf(kind string, answer any) ackRec {
	rec := ackRec{kind: kinds[kind]}
	switch a := answer.(type) {
	case ledger.Receipt:
		rec.seq = a.Seq
	case lien.LienResult:
		rec.lien = a.Lien.ID
	case lien.ChargeResult:
		rec.charge = a.Charge.ID
	case ledger.Lien:
		rec.lien = a.ID
	case ledger.Charge:
		rec.charge = a.ID
	}
	return rec
}

// journalState is what the checkpoints have read of the journal.
type journalState struct {
	mu      sync.Mutex        // guards acked and fresh, which the workers add to
	acked   map[string]ackRec // by "client request-id"
	fresh   []string          // acknowledged since the last checkpoint
	entries map[string]int    // how many entries each request of the soak's clients has
	lost    map[string]bool
	doubled map[string]bool
	maxSeq  uint64       // the entries up to it have been read
	readTo  time.Time    // the server's time the last read reached
	anchor  ledger.Entry // the last entry read, whose hash must not change
	created time.Time
}

// acked records an acknowledged change.
func (r *run) acked(w *worker, o op, answer any, first time.Time) {
	now := time.Now()
	r.stats.changes.Add(1)
	r.stats.mu.Lock()
	r.stats.longestAck = max(r.stats.longestAck, now.Sub(first))
	r.stats.mu.Unlock()
	for {
		last := r.lastFirst.Load()
		if first.UnixNano() <= last || r.lastFirst.CompareAndSwap(last, first.UnixNano()) {
			break
		}
	}
	if since := r.stopped.Load(); since != nil && first.After(*since) {
		r.failf("%s (request %s, client %s), first sent %s after the store stopped, was acknowledged before the server was restarted",
			o.kind, o.id, w.name, first.Sub(*since).Round(time.Millisecond))
	}
	key := w.name + " " + o.id
	j := &r.journal
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.acked == nil {
		j.acked = map[string]ackRec{}
	}
	if _, twice := j.acked[key]; twice {
		r.failf("request %s acknowledged twice by the soak itself", key)
	}
	j.acked[key] = recordOf(o.kind, answer)
	j.fresh = append(j.fresh, key)
}

// journalWindow is how much of the journal, by time, one read asks for
// at first; it adapts to keep answers to a few thousand entries.
const journalWindow = 5 * time.Second

// readJournal reads the entries from time from to the server's now, a
// window at a time, and calls fn with each.
func (r *run) readJournal(from time.Time, fn func(ledger.Entry)) (time.Time, error) {
	settings, err := r.admin.Settings(background)
	if err != nil {
		return time.Time{}, err
	}
	if r.journal.created.IsZero() {
		r.journal.created = settings.Created
	}
	if from.IsZero() || from.Before(r.journal.created) {
		from = r.journal.created.Add(-time.Second)
	}
	to := settings.Now.Add(time.Second)
	window := journalWindow
	for t := from; t.Before(to); {
		end := t.Add(window)
		if end.After(to) {
			end = to
		}
		entries, err := r.admin.Journal(background, ledger.JournalFilter{From: t, To: end})
		if err != nil {
			if window > time.Millisecond {
				window /= 4 // perhaps too large an answer
				continue
			}
			return time.Time{}, err
		}
		for _, e := range entries {
			fn(e)
		}
		t = end
		switch {
		case len(entries) > 8000:
			window = max(window/2, time.Millisecond)
		case len(entries) < 2000:
			window = min(window*2, time.Hour)
		}
	}
	return settings.Now, nil
}

// actorKey is the key of an entry made by one of the soak's clients, or
// "" for the set-up's and the server's own.
func (r *run) actorKey(e ledger.Entry) string {
	name, ok := strings.CutPrefix(e.Actor, "client:")
	if !ok || name == "soak-check" || e.RequestID == "" {
		return ""
	}
	if _, ours := r.keys[name]; !ours {
		return ""
	}
	return name + " " + e.RequestID
}

// matches checks that entry e is the one rec's answer described.
func (rec ackRec) matches(e ledger.Entry) error {
	switch {
	case e.Kind != rec.kind:
		return fmt.Errorf("answered as a %s, the journal has a %s (entry %d)", rec.kind, e.Kind, e.Seq)
	case rec.seq != 0 && e.Seq != rec.seq:
		return fmt.Errorf("answered as entry %d, the journal has it as entry %d", rec.seq, e.Seq)
	case rec.lien != 0 && (e.Lien == nil || e.Lien.ID != rec.lien):
		return fmt.Errorf("answered with lien %d, the journal's entry %d has %+v", rec.lien, e.Seq, e.Lien)
	case rec.charge != 0 && (e.Charge == nil || e.Charge.ID != rec.charge):
		return fmt.Errorf("answered with charge %d, the journal's entry %d has %+v", rec.charge, e.Seq, e.Charge)
	}
	return nil
}

// check checks the bank while the workers wait: the journal's entries
// since the last check (each acknowledged change there exactly once, and
// as answered; no request of the soak's twice; the last entry checked
// before still there, unchanged), the accounts' amounts against what the
// acknowledged changes add up to, the active liens against the jobs
// running, and a full audit.
func (r *run) check(when string) {
	before := r.failed
	for _, s := range r.servers {
		if !s.Running() {
			r.failf("%s: %s is not running: %v\n%s", when, s.Name, s.ExitErr(), s.LogTail())
			s.MustStart(r.t)
		}
	}
	r.checkJournal(when)
	r.checkAmounts(when)
	r.checkLiens(when)
	r.audit(when)
	if r.failed == before {
		r.stats.checkpointsPassed++
	}
}

func (r *run) checkJournal(when string) {
	j := &r.journal
	if j.entries == nil {
		j.entries, j.lost, j.doubled = map[string]int{}, map[string]bool{}, map[string]bool{}
	}
	if j.anchor.Seq != 0 {
		r.checkAnchor(when)
	}
	j.mu.Lock()
	fresh := j.fresh
	j.fresh = nil
	j.mu.Unlock()
	var seqs []uint64
	last := j.anchor
	see := func(e ledger.Entry) {
		if e.Seq <= j.maxSeq {
			return
		}
		seqs = append(seqs, e.Seq)
		if e.Seq > last.Seq {
			last = e
		}
		key := r.actorKey(e)
		if key == "" {
			return
		}
		j.entries[key]++
		switch n := j.entries[key]; {
		case n == 2:
			j.doubled[key] = true
			r.failf("%s: request %s is in the journal twice (the second time as entry %d, a %s)", when, key, e.Seq, e.Kind)
		case n == 1:
			j.mu.Lock()
			rec, ok := j.acked[key]
			j.mu.Unlock()
			if ok {
				if err := rec.matches(e); err != nil {
					r.failf("%s: request %s: %v", when, key, err)
				}
			}
		}
	}
	from := j.readTo.Add(-10 * time.Second)
	to, err := r.readJournal(from, see)
	if err != nil {
		r.failf("%s: reading the journal: %v", when, err)
		return
	}
	slices.Sort(seqs)
	for i, s := range seqs {
		if want := j.maxSeq + uint64(i) + 1; s != want {
			// An entry stamped earlier than the windows read, committed
			// later: read everything again for the missing ones.
			missing := map[uint64]bool{}
			for k := want; k < s; k++ {
				missing[k] = true
			}
			if _, err := r.readJournal(time.Time{}, func(e ledger.Entry) {
				if missing[e.Seq] {
					delete(missing, e.Seq)
					see(e)
				}
			}); err != nil {
				r.failf("%s: reading the journal again: %v", when, err)
				return
			}
			if len(missing) > 0 {
				r.failf("%s: the journal has no entries %d to %d, but has %d", when, want, s-1, s)
			}
			break
		}
	}
	if len(seqs) > 0 {
		j.maxSeq = slices.Max(seqs)
	}
	j.readTo, j.anchor = to, last
	for _, key := range fresh {
		if j.entries[key] == 0 && !j.lost[key] {
			j.lost[key] = true
			r.failf("%s: acknowledged request %s is not in the journal", when, key)
		}
	}
}

// checkAnchor checks that the last entry read at the previous checkpoint
// is still there with its hash: with the audit's check of the hash chain,
// no entry before it can have changed or gone.
func (r *run) checkAnchor(when string) {
	a := r.journal.anchor
	for _, margin := range []time.Duration{time.Microsecond, 5 * time.Second} {
		entries, err := r.admin.Journal(background, ledger.JournalFilter{From: a.Time.Add(-margin + time.Microsecond), To: a.Time.Add(margin)})
		if err != nil {
			r.failf("%s: reading entry %d again: %v", when, a.Seq, err)
			return
		}
		for _, e := range entries {
			if e.Seq == a.Seq {
				if e.Hash != a.Hash || e.RequestID != a.RequestID {
					r.failf("%s: entry %d changed since the last checkpoint: hash %s, was %s", when, a.Seq, e.Hash, a.Hash)
				}
				return
			}
		}
	}
	r.failf("%s: entry %d, the last one read at the previous checkpoint, is gone", when, a.Seq)
}

// checkAmounts compares each account's amount with what the acknowledged
// changes add up to: a change applied twice, even under another request
// id, or one lost, shows here.
func (r *run) checkAmounts(when string) {
	for _, a := range accounts {
		nb, err := r.admin.Balance(background, a)
		if err != nil {
			r.failf("%s: balance of %s: %v", when, a, err)
			continue
		}
		if want := r.model.amount(a); !nb.Amount.Equal(want) {
			r.failf("%s: %s holds %s; the acknowledged changes add up to %s (off by %s)", when, a, nb.Amount, want, nb.Amount.Sub(want))
		}
		if r.draining.Load() && !nb.Reserved.IsZero() {
			r.failf("%s: %s has %s reserved once every job has ended", when, a, nb.Reserved)
		}
	}
}

// checkLiens compares the active liens with the jobs the schedulers have
// running: a lien of a job that was charged or released, or never
// acknowledged, is leaked; a running job without one lost its lien.
func (r *run) checkLiens(when string) {
	active, err := r.admin.Liens(background, "", false)
	if err != nil {
		r.failf("%s: listing the active liens: %v", when, err)
		return
	}
	running := map[string]bool{}
	for _, w := range r.workers {
		w.mu.Lock()
		for _, j := range w.jobs {
			running[j.Machine+"/"+j.ID] = true
		}
		w.mu.Unlock()
	}
	seen := map[string]bool{}
	for _, l := range active {
		job := l.Machine + "/" + l.JobID
		seen[job] = true
		if !running[job] {
			r.failf("%s: lien %d of job %s is active, but no job of the workload holds it (leaked)", when, l.ID, job)
		}
	}
	for job := range running {
		if !seen[job] {
			r.failf("%s: job %s is running, but its lien is not active", when, job)
		}
	}
}

// audit runs `ingot audit --full` through the first server.
func (r *run) audit(when string) {
	cli := ingotproc.Command{Bin: r.bin, Global: []string{"--server", r.servers[0].URL, "--key-file", r.adminKey}}
	out, err := cli.Run(30*time.Minute, "audit", "--full")
	if err != nil || !strings.Contains(out, "audit: OK") {
		r.failf("%s: ingot audit --full: %v\n%s", when, err, out)
		return
	}
	r.stats.auditsPassed++
}

// recount reads the whole journal again, at the end, and counts each
// acknowledged change's entries afresh.
func (r *run) recount() {
	j := &r.journal
	count := map[string]int{}
	var n, maxSeq uint64
	if _, err := r.readJournal(time.Time{}, func(e ledger.Entry) {
		n++
		maxSeq = max(maxSeq, e.Seq)
		if key := r.actorKey(e); key != "" {
			count[key]++
		}
	}); err != nil {
		r.failf("at the end: reading the whole journal: %v", err)
		return
	}
	if n != maxSeq {
		r.failf("at the end: the journal holds %d entries, numbered up to %d", n, maxSeq)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for key := range j.acked {
		if count[key] == 0 && !j.lost[key] {
			j.lost[key] = true
			r.failf("at the end: acknowledged request %s is not in the journal", key)
		}
	}
	for key, c := range count {
		if c > 1 && !j.doubled[key] {
			j.doubled[key] = true
			r.failf("at the end: request %s is in the journal %d times", key, c)
		}
	}
}
