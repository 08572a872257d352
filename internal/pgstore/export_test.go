package pgstore

import "time"

// SetListenTimes shortens Listen's quiet period and ping timeout for a
// test; the returned function restores them.
func SetListenTimes(quiet, ping time.Duration) func() {
	q, p := listenQuiet, listenPingTimeout
	listenQuiet, listenPingTimeout = quiet, ping
	return func() { listenQuiet, listenPingTimeout = q, p }
}
