package pricing

import (
	"fmt"
	"testing"
)

func TestAllocate(t *testing.T) {
	cases := []struct {
		total   int64
		weights []int64
		want    string
	}{
		{1000, []int64{3333, 3333, 3333}, "[334 333 333]"},
		{2, []int64{1, 1, 1}, "[1 1 0]"},
		{5, []int64{1, 2, 3}, "[1 2 2]"},
		{100, []int64{1000, 0, 3000}, "[25 0 75]"},
		{7, []int64{7}, "[7]"},
		{0, []int64{5, 5}, "[0 0]"},
		{0, []int64{0, 0}, "[0 0]"},
		{10, []int64{10, 0, 0}, "[10 0 0]"},
		{1, []int64{0, 3, 3}, "[0 1 0]"},
		// Remainder ties resolved to the lower index, even far apart.
		{3, []int64{1, 1, 1, 1, 1, 1}, "[1 1 1 0 0 0]"},
		// 128-bit intermediate: total × weight overflows int64.
		{MaxAmount, []int64{MaxAmount - 1, 1}, "[9007199254740990 1]"},
		{MaxAmount - 1, []int64{MaxAmount / 2, MaxAmount - MaxAmount/2}, "[4503599627370495 4503599627370495]"},
	}
	for _, tc := range cases {
		got := allocate(tc.total, tc.weights)
		if s := fmt.Sprint(got); s != tc.want {
			t.Errorf("allocate(%d, %v) = %s, want %s", tc.total, tc.weights, s, tc.want)
		}
		var sum int64
		for i, g := range got {
			sum += g
			if g < 0 || g > tc.weights[i] {
				t.Errorf("allocate(%d, %v): share %d outside [0, %d]", tc.total, tc.weights, g, tc.weights[i])
			}
		}
		if sum != tc.total {
			t.Errorf("allocate(%d, %v) sums to %d", tc.total, tc.weights, sum)
		}
	}
}

// Exhaustive small cases: shares always sum to the total and never exceed
// their weight.
func TestAllocateExhaustive(t *testing.T) {
	for a := int64(0); a <= 7; a++ {
		for b := int64(0); b <= 7; b++ {
			for c := int64(0); c <= 7; c++ {
				w := []int64{a, b, c}
				for total := int64(0); total <= a+b+c; total++ {
					got := allocate(total, w)
					if got[0]+got[1]+got[2] != total || got[0] > a || got[1] > b || got[2] > c {
						t.Fatalf("allocate(%d, %v) = %v", total, w, got)
					}
				}
			}
		}
	}
}

func TestPercentOf(t *testing.T) {
	cases := []struct{ amount, bp, want int64 }{
		{9999, 1000, 1000}, // 999.9
		{3, 5000, 2},       // 1.5 rounds half up
		{5, 1000, 1},       // 0.5 rounds half up
		{4, 1000, 0},       // 0.4
		{10000, 10000, 10000},
		{1, 1, 0},
		{0, 1000, 0},
		{MaxAmount, 10000, MaxAmount},
		{MaxAmount, 5000, 4503599627370496}, // 4503599627370495.5
	}
	for _, tc := range cases {
		if got := percentOf(tc.amount, tc.bp); got != tc.want {
			t.Errorf("percentOf(%d, %d) = %d, want %d", tc.amount, tc.bp, got, tc.want)
		}
	}
}

func TestCheckedArithmetic(t *testing.T) {
	if v, ok := addAmounts(MaxAmount-1, 1); !ok || v != MaxAmount {
		t.Errorf("addAmounts at the limit = %d %v", v, ok)
	}
	if _, ok := addAmounts(MaxAmount, 1); ok {
		t.Error("addAmounts beyond 2^53−1 succeeded")
	}
	if _, ok := addAmounts(-1, 1); ok {
		t.Error("addAmounts accepted a negative amount")
	}
	if v, ok := mulAmount(MaxAmount, 1); !ok || v != MaxAmount {
		t.Errorf("mulAmount at the limit = %d %v", v, ok)
	}
	for _, c := range [][2]int64{{MaxAmount, 2}, {1 << 32, 1 << 32}, {MaxAmount, MaxAmount}, {-1, 5}} {
		if _, ok := mulAmount(c[0], c[1]); ok {
			t.Errorf("mulAmount(%d, %d) succeeded", c[0], c[1])
		}
	}
}
