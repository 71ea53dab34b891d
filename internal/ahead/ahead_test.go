package ahead

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
)

// numbers gives 1..n, counting how many it gave.
func numbers(n int, given *int) func(func(int) (bool, error)) error {
	return func(yield func(int) (bool, error)) error {
		for i := 1; i <= n; i++ {
			*given++
			if more, err := yield(i); err != nil || !more {
				return err
			}
		}
		return nil
	}
}

// TestMapInOrder: every result is used, in order, however many are
// mapped ahead; f runs on each item once.
func TestMapInOrder(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 100, 1000} {
		var given int
		var calls atomic.Int64
		var got []int
		err := Map(numbers(n, &given), func(i int) int { calls.Add(1); return i * i }, func(sq int) (bool, error) {
			got = append(got, sq)
			return true, nil
		})
		want := []int{}
		for i := 1; i <= n; i++ {
			want = append(want, i*i)
		}
		if err != nil || !slices.Equal(append([]int{}, got...), want) || calls.Load() != int64(n) {
			t.Errorf("n=%d: %v %v, f called %d times; want %v", n, got, err, calls.Load(), want)
		}
	}
}

// TestMapStops: a use that stops, or fails, stops the sequence soon after
// (a few items mapped ahead, not the whole sequence), and every f has
// returned when Map does.
func TestMapStops(t *testing.T) {
	stop := errors.New("stop")
	for _, c := range []struct {
		name string
		use  func(int) (bool, error)
		err  error
	}{
		{"false", func(i int) (bool, error) { return i < 5, nil }, nil},
		{"error", func(i int) (bool, error) {
			if i == 5 {
				return false, stop
			}
			return true, nil
		}, stop},
	} {
		var given int
		var running atomic.Int64
		err := Map(numbers(100000, &given), func(i int) int { running.Add(1); defer running.Add(-1); return i }, c.use)
		if !errors.Is(err, c.err) || given > 5+firstWindow+5 || running.Load() != 0 {
			t.Errorf("%s: %v; %d items given, %d f running after Map returned", c.name, err, given, running.Load())
		}
	}
}

// TestMapEachFails: each's error is Map's.
func TestMapEachFails(t *testing.T) {
	broken := errors.New("broken")
	err := Map(func(yield func(int) (bool, error)) error {
		yield(1)
		return broken
	}, func(i int) int { return i }, func(int) (bool, error) { return true, nil })
	if !errors.Is(err, broken) {
		t.Errorf("Map: %v, want %v", err, broken)
	}
}
