// Package statswindow parses the [since, until) window of the services'
// read-only statistics RPCs (GetCheckoutStats, GetOrderStats,
// GetPaymentStats), so all three refuse the same bad windows the same way.
package statswindow

import (
	"time"

	"github.com/bcpdev/bcp/internal/apperr"
)

// Parse turns [since, until) in Unix seconds into query bounds; 0 is an
// open end (nil).
func Parse(since, until int64) (*time.Time, *time.Time, error) {
	if since < 0 || until < 0 {
		return nil, nil, apperr.Invalid("since_unix", "invalid_window", "since_unix and until_unix must not be negative")
	}
	if since != 0 && until != 0 && until <= since {
		return nil, nil, apperr.Invalid("until_unix", "invalid_window", "until_unix must be after since_unix")
	}
	var a, b *time.Time
	if since != 0 {
		t := time.Unix(since, 0)
		a = &t
	}
	if until != 0 {
		t := time.Unix(until, 0)
		b = &t
	}
	return a, b, nil
}
