// Package lease tells a process's unfinished work from work nobody is
// doing any more (issue 32): a completion claimed, a card charge or a Pix
// charge being created, a closed checkout's stock being released, by a
// process that then died.
//
// Each process incarnation has an id (Holder.ID), which the rows of work
// it starts record as their owner, and holds a PostgreSQL session of its
// own whose application_name names that id. PostgreSQL ends the session
// as soon as the process is gone: a SIGKILL or a crash closes its socket,
// and the backend, idle in a read, exits at once (a lost host is noticed
// by TCP keepalives within seconds). So an owner is alive while its
// session is listed in pg_stat_activity, and no lease has to run out:
// the work of a dead process can be taken up at once, by its successor
// at start-up or by any other process.
//
// Two precautions keep a live process's work from being taken by
// mistake, though doing so is safe anyway (taking up work settles it
// from the payments service's or the processor's record, which a late
// answer of the first request cannot contradict):
//   - after PostgreSQL itself restarts or fails over, every session is
//     gone until each process reconnects: an owner is judged only once
//     this process's own session is older than Grace, except an owner of
//     the same name (host, roles, internal address), which is this
//     process's predecessor — a live process of that name cannot exist;
//   - an owner is judged gone only when it was missing at two looks
//     Confirm apart (a session that dropped and is being reopened).
package lease

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// AppNamePrefix starts the application_name of every holder's session.
const AppNamePrefix = "bcp holder "

// Keepalive: how often the session is checked (and reopened when lost).
const Keepalive = time.Second

// An owner is judged only once this process's session is Grace old (after
// PostgreSQL restarted or failed over every session is new, and live
// processes take a moment to reconnect), and gone only when missing at
// two looks Confirm apart. Variables: tests change them.
var (
	Grace   = 5 * time.Second
	Confirm = time.Second
)

// Holder is this process incarnation.
type Holder struct {
	id     string
	prefix string // the id's name part: the same for every incarnation of one name
	url    string
	log    *slog.Logger

	mu      sync.Mutex
	conn    *pgx.Conn
	since   time.Time           // when conn was opened
	missing map[string]sighting // other owners found without a session, since

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// Start opens the holder's session on dbURL and keeps it open until Close.
// name identifies the process across restarts (host, roles and a fixed
// internal address); "" for none (every incarnation then counts as a
// stranger to the next).
func Start(ctx context.Context, dbURL, name string, log *slog.Logger) (*Holder, error) {
	if log == nil {
		log = slog.Default()
	}
	prefix := hex.EncodeToString(random(4))
	if name != "" {
		sum := sha256.Sum256([]byte(name))
		prefix = hex.EncodeToString(sum[:4])
	}
	h := &Holder{id: prefix + "." + hex.EncodeToString(random(6)), prefix: prefix, url: dbURL, log: log,
		missing: map[string]sighting{}, stop: make(chan struct{}), done: make(chan struct{})}
	if err := h.connect(ctx); err != nil {
		return nil, fmt.Errorf("lease: open the holder's session: %w", err)
	}
	go h.keep()
	return h, nil
}

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// IsID says whether s has the form of a holder's id (another owner, such
// as a river client id of a process that predates holders, is never
// judged).
func IsID(s string) bool { return idPattern.MatchString(s) }

var idPattern = regexp.MustCompile(`^[0-9a-f]{8}\.[0-9a-f]{12}$`)

// ID is this incarnation's id, the owner its work records.
func (h *Holder) ID() string {
	if h == nil {
		return ""
	}
	return h.id
}

// Owns says whether owner is this incarnation.
func (h *Holder) Owns(owner string) bool { return h != nil && owner == h.id }

func (h *Holder) connect(ctx context.Context) error {
	cfg, err := pgx.ParseConfig(h.url)
	if err != nil {
		return err
	}
	cfg.ConnectTimeout = 5 * time.Second
	cfg.RuntimeParams["application_name"] = AppNamePrefix + h.id
	// A host that vanishes without closing the socket: the server notices
	// within about 10 s instead of hours (TCP only; ignored on a socket).
	cfg.RuntimeParams["tcp_keepalives_idle"] = "5"
	cfg.RuntimeParams["tcp_keepalives_interval"] = "2"
	cfg.RuntimeParams["tcp_keepalives_count"] = "3"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	h.mu.Lock()
	old := h.conn
	h.conn, h.since = conn, time.Now()
	h.mu.Unlock()
	if old != nil {
		_ = old.Close(context.Background())
	}
	return nil
}

// keep pings the session every Keepalive and reopens it when lost.
func (h *Holder) keep() {
	defer close(h.done)
	t := time.NewTicker(Keepalive)
	defer t.Stop()
	lost := false // logged once, not every second the database is away
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		h.mu.Lock()
		conn := h.conn
		var err error
		if conn == nil || conn.IsClosed() {
			err = errors.New("no session")
		} else {
			err = conn.Ping(ctx)
		}
		h.mu.Unlock()
		if err != nil {
			switch cerr := h.connect(ctx); {
			case cerr != nil && !lost:
				lost = true
				h.log.Warn("lease: the holder's session is lost; reconnecting every second", "holder", h.id, "err", cerr.Error())
			case cerr == nil:
				lost = false
				h.log.Info("lease: the holder's session is open again", "holder", h.id)
			}
		}
		cancel()
	}
}

// Gone returns the owners among owners (other than this incarnation)
// whose process is gone, by the rules of the package comment; without
// another owner it asks nothing. An error means nothing could be judged
// (the session is down): the map is then nil, which reads as "none gone".
// Callers share the holder (checkout's and payments' recoveries in one
// process), each with its own owners: a sighting is forgotten only once
// nobody has asked about it for forgetAfter, never because one caller's
// list lacks it.
func (h *Holder) Gone(ctx context.Context, owners []string) (map[string]bool, error) {
	if !slices.ContainsFunc(owners, func(o string) bool { return o != h.id && IsID(o) }) {
		return nil, nil
	}
	live := map[string]bool{}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn == nil || h.conn.IsClosed() {
		return nil, errors.New("lease: the holder's session is not open")
	}
	rows, err := h.conn.Query(ctx, `SELECT application_name FROM pg_stat_activity
		WHERE datname = current_database() AND starts_with(application_name, $1)`, AppNamePrefix)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, err
		}
		live[strings.TrimPrefix(name, AppNamePrefix)] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	now := time.Now()
	settled := now.Sub(h.since) >= Grace
	gone := map[string]bool{}
	for _, o := range owners {
		if o == h.id || !IsID(o) {
			continue
		}
		if live[o] {
			delete(h.missing, o)
			continue
		}
		if prefix, _, _ := strings.Cut(o, "."); prefix == h.prefix {
			gone[o] = true // this process's predecessor
			continue
		}
		m, ok := h.missing[o]
		if !ok {
			m.first = now
		}
		m.last = now
		h.missing[o] = m
		if settled && now.Sub(m.first) >= Confirm {
			gone[o] = true
		}
	}
	for o, m := range h.missing {
		if now.Sub(m.last) > forgetAfter {
			delete(h.missing, o)
		}
	}
	return gone, nil
}

// sighting is when an owner was first and last found without a session.
type sighting struct{ first, last time.Time }

// forgetAfter bounds how long a sighting nobody asks about is kept.
const forgetAfter = time.Minute

// Close ends the session: this incarnation's work is then anyone's.
func (h *Holder) Close() {
	if h == nil {
		return
	}
	h.closeOnce.Do(func() {
		close(h.stop)
		<-h.done
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.conn != nil {
			_ = h.conn.Close(context.Background())
			h.conn = nil
		}
	})
}
