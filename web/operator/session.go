package operator

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bcpdev/bcp/web/internal/pagesec"
)

// Sessions are stateless: the cookie holds "v1.<issued>.<expires>.<id>"
// and an HMAC of it under a key derived from the operator token, so every
// edge process of a deployment accepts it and rotating the operator token
// ends every session. Logout clears the cookie (a copied cookie stays
// valid until it expires, at most SessionTTL).

// SessionTTL is how long a sign-in lasts.
const SessionTTL = 12 * time.Hour

const (
	sessionCookie = "bcp_operador"
	loginCookie   = "bcp_operador_login"
)

// keys derives the console's keys from the operator token.
type keys struct{ session, csrf []byte }

func deriveKeys(operatorToken string) keys {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, []byte(operatorToken))
		m.Write([]byte("bcp/operator-console/" + label))
		return m.Sum(nil)
	}
	return keys{session: derive("session"), csrf: derive("csrf")}
}

func randomID() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// session is a verified sign-in.
type session struct {
	id      string
	expires time.Time
}

// newSession returns a cookie value for a sign-in at now.
func (k keys) newSession(now time.Time) (string, session) {
	s := session{id: randomID(), expires: now.Add(SessionTTL)}
	body := "v1." + strconv.FormatInt(now.Unix(), 10) + "." + strconv.FormatInt(s.expires.Unix(), 10) + "." + s.id
	return body + "." + k.sign(body), s
}

// parseSession verifies a cookie value: signature first (constant time),
// then expiry.
func (k keys) parseSession(v string, now time.Time) (session, bool) {
	i := strings.LastIndexByte(v, '.')
	if i < 0 || len(v) > 256 {
		return session{}, false
	}
	body, sig := v[:i], v[i+1:]
	if !pagesec.Equal(sig, k.sign(body)) {
		return session{}, false
	}
	parts := strings.Split(body, ".")
	if len(parts) != 4 || parts[0] != "v1" {
		return session{}, false
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return session{}, false
	}
	return session{id: parts[3], expires: time.Unix(exp, 0)}, true
}

// sign is the session cookie's signature of body.
func (k keys) sign(body string) string { return pagesec.MAC(k.session, "session", body) }

// csrfToken is the form token of a signed-in session.
func (k keys) csrfToken(s session) string { return pagesec.MAC(k.csrf, "session", s.id) }

// loginToken is the sign-in form's token, bound to the nonce cookie.
func (k keys) loginToken(nonce string) string { return pagesec.MAC(k.csrf, "login", nonce) }

// tokenEqual compares a typed token with the operator token in constant
// time; hashing first hides the length too.
func tokenEqual(got, want string) bool {
	if want == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// limiter slows down guessing: per client IP, the first freeFailures
// failed sign-ins cost nothing, then each further one locks the IP out for
// twice as long as the previous (1 s, 2 s, 4 s … up to maxLock). A
// success clears the IP; idle entries are forgotten.
type limiter struct {
	now func() time.Time
	mu  sync.Mutex
	ips map[string]*attempts
}

type attempts struct {
	failures int
	until    time.Time // locked out until
	last     time.Time
}

const (
	freeFailures = 3
	maxLock      = 15 * time.Minute
	forgetAfter  = time.Hour
	maxTracked   = 10_000
)

func newLimiter(now func() time.Time) *limiter {
	return &limiter{now: now, ips: map[string]*attempts{}}
}

// locked returns how long ip must still wait (0: may try).
func (l *limiter) locked(ip string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.ips[ip]
	if a == nil {
		return 0
	}
	if d := a.until.Sub(l.now()); d > 0 {
		return d
	}
	return 0
}

// fail records a failed sign-in and returns the lockout it starts.
func (l *limiter) fail(ip string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	a := l.ips[ip]
	if a == nil || now.Sub(a.last) > forgetAfter {
		if len(l.ips) >= maxTracked {
			l.prune(now)
		}
		a = &attempts{}
		l.ips[ip] = a
	}
	a.failures++
	a.last = now
	if a.failures <= freeFailures {
		return 0
	}
	lock := maxLock
	if n := a.failures - freeFailures - 1; n < 10 {
		lock = min(time.Duration(1<<n)*time.Second, maxLock)
	}
	a.until = now.Add(lock)
	return lock
}

func (l *limiter) success(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.ips, ip)
}

// prune drops idle entries; if the table is still full (an attack from
// many addresses), it drops arbitrary ones rather than grow without bound.
func (l *limiter) prune(now time.Time) {
	for ip, a := range l.ips {
		if now.Sub(a.last) > forgetAfter && now.After(a.until) {
			delete(l.ips, ip)
		}
	}
	for ip := range l.ips {
		if len(l.ips) < maxTracked {
			break
		}
		delete(l.ips, ip)
	}
}

// clientIP is the connection's address: the console trusts no forwarding
// header (behind a proxy every client shares the proxy's budget).
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
