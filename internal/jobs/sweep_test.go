package jobs

import (
	"context"
	"errors"
	"testing"
)

// Sweep lists again while listings come back full, counts what moved,
// hands failures to failed and goes on, stops when a whole listing fails
// (the next sweep sees it again) and returns a listing's error.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	t.Run("batches", func(t *testing.T) {
		sizes := []int{SweepBatch, SweepBatch, 3}
		listed := 0
		var fails []int
		moved, err := Sweep(ctx, func(context.Context) ([]int, error) {
			n := sizes[listed]
			listed++
			out := make([]int, n)
			for i := range out {
				out[i] = i
			}
			return out, nil
		}, func(i int) (bool, error) {
			switch {
			case i == 7:
				return false, errors.New("boom")
			case i%2 == 0:
				return true, nil
			}
			return false, nil
		}, func(i int, err error) { fails = append(fails, i) })
		if err != nil || listed != 3 {
			t.Fatalf("listed %d times, err %v; want 3, nil", listed, err)
		}
		// Even numbers moved: 250 + 250 + 2 (0 and 2 of the last three).
		if moved != 502 || len(fails) != 2 {
			t.Fatalf("moved %d, failed %v; want 502 moved and item 7 failed twice", moved, fails)
		}
	})
	t.Run("a failing batch ends the sweep", func(t *testing.T) {
		listed := 0
		moved, err := Sweep(ctx, func(context.Context) ([]int, error) {
			listed++
			return make([]int, SweepBatch), nil
		}, func(int) (bool, error) { return false, errors.New("down") }, func(int, error) {})
		if err != nil || listed != 1 || moved != 0 {
			t.Fatalf("listed %d, moved %d, err %v; want 1, 0, nil", listed, moved, err)
		}
	})
	t.Run("a listing error", func(t *testing.T) {
		boom := errors.New("no database")
		_, err := Sweep(ctx, func(context.Context) ([]int, error) { return nil, boom }, func(int) (bool, error) { return true, nil }, func(int, error) {})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	})
}
