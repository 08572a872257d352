package admin

import "time"

// SetClock fixes the clock certificate expiries are counted from; the
// returned func restores it.
func SetClock(now func() time.Time) (restore func()) {
	old := clock
	clock = now
	return func() { clock = old }
}
