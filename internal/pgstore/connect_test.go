package pgstore_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/testdb"
)

// The pool keeps the database URL's connect_timeout (what a multi-host
// URL spends on a host that is gone, per new connection) and uses
// DefaultConnectTimeout when the URL sets none.
func TestOpenConnectTimeout(t *testing.T) {
	d := testdb.New(t)
	withTimeout := func(v string) string {
		u, err := url.Parse(d.AppURL)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Del("connect_timeout")
		if v != "" {
			q.Set("connect_timeout", v)
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	for _, c := range []struct {
		timeout string
		want    time.Duration
	}{{"", pgstore.DefaultConnectTimeout}, {"2", 2 * time.Second}} {
		pool, err := pgstore.Open(context.Background(), withTimeout(c.timeout), pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := pool.Config().ConnConfig.ConnectTimeout
		pool.Close()
		if got != c.want {
			t.Errorf("connect_timeout %q: the pool's connect timeout is %s, want %s", c.timeout, got, c.want)
		}
	}
}
