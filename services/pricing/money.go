package pricing

import (
	"math/bits"
)

// MaxAmount is the largest amount the protocol carries (amount.json:
// 2^53-1 minor units, the largest integer every JSON reader keeps exact).
// Anything beyond it is rejected, never rounded.
const MaxAmount int64 = 1<<53 - 1

// addAmounts adds non-negative amounts, failing beyond MaxAmount.
func addAmounts(a, b int64) (int64, bool) {
	if a < 0 || b < 0 || a > MaxAmount || b > MaxAmount-a {
		return 0, false
	}
	return a + b, true
}

// mulAmount multiplies non-negative values, failing beyond MaxAmount.
func mulAmount(a, b int64) (int64, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > uint64(MaxAmount) {
		return 0, false
	}
	return int64(lo), true
}

// mulDiv returns floor(a*b/c) and the remainder with a 128-bit
// intermediate product. The caller guarantees a*b/c < 2^64 (every use has
// b <= c or a <= c).
func mulDiv(a, b, c uint64) (q, r uint64) {
	hi, lo := bits.Mul64(a, b)
	return bits.Div64(hi, lo, c)
}

// percentOf returns bp basis points of amount (0 <= bp <= 10000), rounded
// half up to the centavo: the discount is computed once on the amount it
// applies to and never re-rounded per line.
func percentOf(amount, bp int64) int64 {
	if amount <= 0 || bp <= 0 {
		return 0
	}
	q, r := mulDiv(uint64(amount), uint64(bp), 10000)
	if 2*r >= 10000 {
		q++
	}
	return int64(q)
}

// allocate splits total across weights proportionally with the largest
// remainder method: every share is floor(total*w/W), and the centavos left
// over go one each to the largest remainders, ties to the lower index. The
// shares sum exactly to total. With 0 <= total <= sum(weights), no share
// exceeds its weight, so a discount never takes a line below zero. A zero
// weight (a free line) gets nothing.
func allocate(total int64, weights []int64) []int64 {
	out := make([]int64, len(weights))
	var sum uint64
	for _, w := range weights {
		sum += uint64(w)
	}
	if total <= 0 || sum == 0 {
		return out
	}
	rem := make([]uint64, len(weights))
	left := total
	for i, w := range weights {
		if w <= 0 {
			continue
		}
		q, r := mulDiv(uint64(total), uint64(w), sum)
		out[i], rem[i] = int64(q), r
		left -= int64(q)
	}
	// left < len(weights): each floor loses less than one centavo. Pick the
	// left largest remainders; a stable pass per centavo keeps it simple
	// and the tie rule (lower index first) obvious.
	for ; left > 0; left-- {
		best := -1
		for i := range weights {
			if weights[i] > 0 && (best < 0 || rem[i] > rem[best]) {
				best = i
			}
		}
		out[best]++
		rem[best] = 0
	}
	return out
}
