package multisite

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ingot-hpc/ingot/internal/faultproxy"
)

// faultCount counts the faults injected, by kind.
type faultCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (f *faultCount) add(kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	f.n[kind]++
}

func (f *faultCount) snapshot() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.n)
}

// formatCounts lists counts by kind, in the kinds' order.
func formatCounts(n map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(n)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}

// pause waits d, or less if stop comes first; false if it did.
func pause(d time.Duration, stop <-chan struct{}) bool {
	select {
	case <-stop:
		return false
	case <-time.After(d):
		return true
	}
}

// linkFaults gives a random busy link a random fault in a random direction,
// at random points, for up to three seconds each (a black hole beyond
// the outbox's 10 s timeout one time in four), until stop.
func (r *run) linkFaults(rng *rand.Rand, stop <-chan struct{}) {
	var busy []*link
	for _, l := range r.links {
		if l.busy {
			busy = append(busy, l)
		}
	}
	for pause(time.Duration(rng.Int64N(int64(1500*time.Millisecond))), stop) {
		l := busy[rng.IntN(len(busy))]
		d := faultproxy.Direction(rng.IntN(2))
		f := faultproxy.Faults[rng.IntN(len(faultproxy.Faults))]
		delay := time.Duration(0)
		if f == faultproxy.Delay {
			delay = 50*time.Millisecond + time.Duration(rng.Int64N(int64(time.Second)))
		}
		hold := 200*time.Millisecond + time.Duration(rng.Int64N(int64(3*time.Second)))
		if f == faultproxy.BlackHole && rng.IntN(4) == 0 {
			hold = 12 * time.Second
		}
		if err := l.proxy.Set(d, f, delay); err != nil {
			r.t.Errorf("link %s: %v", l, err)
			return
		}
		r.faults.add(fmt.Sprintf("%s %s", f, d))
		pause(hold, stop)
		if err := l.proxy.Heal(); err != nil {
			r.t.Errorf("link %s: %v", l, err)
			return
		}
	}
}

// kills kills a random bank with SIGKILL at random points and starts it
// again on its port a moment later, until stop.
func (r *run) kills(rng *rand.Rand, stop <-chan struct{}) {
	names := slices.Sorted(maps.Keys(r.banks))
	for pause(time.Second+time.Duration(rng.Int64N(int64(4*time.Second))), stop) {
		b := r.banks[names[rng.IntN(len(names))]]
		b.srv.Kill(r.t)
		r.faults.add("SIGKILL " + b.name)
		time.Sleep(100*time.Millisecond + time.Duration(rng.Int64N(int64(900*time.Millisecond))))
		b.srv.MustStart(r.t)
	}
}
