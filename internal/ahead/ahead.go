package ahead

import "runtime"

// maxWindow bounds the items mapped ahead of their use. The window starts
// small and grows by one with each item used, so that a reader that stops
// after a few items (the last five entries of a project) has not had
// hundreds mapped for nothing.
const (
	firstWindow = 4
	maxWindow   = 256
)

// Map calls use with f(x) for each x that each gives, in order, until use
// returns false or an error, which Map returns (or each's error). f runs
// on other goroutines, on items that each has given and use has not yet
// been called for; each and use run on the caller's goroutine. Map
// returns once no f runs, so that the items may refer to memory that is
// valid only until then (a transaction's).
func Map[In, Out any](each func(yield func(In) (bool, error)) error, f func(In) Out, use func(Out) (bool, error)) error {
	// An item goes to a worker and comes back on its done channel, which
	// holds one signal, so that an item used can carry the next: mapping a
	// million items makes a window's worth of them, not a million.
	type item struct {
		in   In
		out  Out
		done chan struct{}
	}
	work := make(chan *item, maxWindow)
	defer close(work)
	for range max(runtime.GOMAXPROCS(0)-1, 1) {
		go func() {
			for it := range work {
				it.out = f(it.in)
				it.done <- struct{}{}
			}
		}()
	}
	var queue, free []*item
	window, stopped := firstWindow, false
	useFirst := func() error {
		it := queue[0]
		<-it.done
		queue = queue[1:]
		out := it.out
		*it = item{done: it.done} // what in and out refer to is the caller's now
		free = append(free, it)
		more, err := use(out)
		stopped = !more
		return err
	}
	err := each(func(in In) (bool, error) {
		var it *item
		if n := len(free); n > 0 {
			it, free = free[n-1], free[:n-1]
		} else {
			it = &item{done: make(chan struct{}, 1)}
		}
		it.in = in
		work <- it
		queue = append(queue, it)
		if len(queue) >= window {
			if err := useFirst(); err != nil {
				return false, err
			}
			window = min(window+1, maxWindow)
		}
		return !stopped, nil
	})
	for err == nil && !stopped && len(queue) > 0 {
		err = useFirst()
	}
	for _, it := range queue {
		<-it.done
	}
	return err
}
