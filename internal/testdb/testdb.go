// Package testdb gives tests a real PostgreSQL: one private cluster per test
// binary (started with the same starter as `bcpd dev`), a migrated template
// database, and a fresh database cloned from it for every test that asks.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }
package testdb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/db"
	"github.com/bcpdev/bcp/internal/pgserver"
	"github.com/bcpdev/bcp/internal/pgstore"
)

const template = "bcp_template"

var (
	server   *pgserver.Server
	cloneMu  sync.Mutex // CREATE DATABASE ... TEMPLATE needs the template idle
	counter  atomic.Int64
	startErr error
	roleURLs db.URLs // role credentials, set once: Bootstrap rotates passwords
)

// Main starts the cluster, migrates the template, runs the tests and stops
// the cluster.
func Main(m *testing.M) int {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bcp-testdb-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testdb:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	_ = os.Chmod(dir, 0o755)
	server, startErr = pgserver.Start(ctx, pgserver.Options{DataDir: filepath.Join(dir, "pgdata"), NoFsync: true})
	if startErr != nil {
		fmt.Fprintln(os.Stderr, "testdb: start PostgreSQL:", startErr)
		return 1
	}
	defer func() { _ = server.Stop() }()
	urls, err := db.Bootstrap(ctx, server.URL("postgres"), template)
	roleURLs = urls
	if err != nil {
		fmt.Fprintln(os.Stderr, "testdb: bootstrap:", err)
		return 1
	}
	if _, err := db.MigrateUp(ctx, urls.Owner, nil); err != nil {
		fmt.Fprintln(os.Stderr, "testdb: migrate template:", err)
		return 1
	}
	return m.Run()
}

// DB is one test's database.
type DB struct {
	Name     string
	AppURL   string // bcp_app: what services use (RLS applies)
	OwnerURL string // bcp_owner: migrations
	SuperURL string // superuser: test set-up only
	Pool     *pgxpool.Pool
}

// Plans is how many custom and generic plans the prepared statement
// named by sqlc (its "-- name: NAME" line) has had on pool's connection:
// with OneConnPool, every call the test made.
func Plans(t testing.TB, pool *pgxpool.Pool, name string) (custom, generic int64) {
	t.Helper()
	if err := pool.QueryRow(context.Background(), `SELECT custom_plans, generic_plans FROM pg_prepared_statements
		WHERE statement LIKE '-- name: ' || $1 || ' %'`, name).Scan(&custom, &generic); err != nil {
		t.Fatalf("plans of %s: %v", name, err)
	}
	return custom, generic
}

// OneConnPool is a pool of the application role that holds at most one
// connection, closed when the test ends: what a statement leaves on its
// connection (prepared statements and their plans, settings) shows to the
// next borrower. tracer, when not nil, sees everything sent.
func (d *DB) OneConnPool(t testing.TB, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(d.AppURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// New returns a fresh migrated database, dropped when the test ends.
func New(t testing.TB) *DB {
	t.Helper()
	return create(t, true)
}

// NewEmpty returns a fresh database with no migrations applied.
func NewEmpty(t testing.TB) *DB {
	t.Helper()
	return create(t, false)
}

func create(t testing.TB, migrated bool) *DB {
	t.Helper()
	if server == nil {
		t.Fatal("testdb: call testdb.Main from TestMain")
	}
	ctx := context.Background()
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), counter.Add(1))
	super := server.URL("postgres")
	from := template
	if !migrated {
		from = "template0"
	}
	cloneMu.Lock()
	err := db.CreateDatabaseFromTemplate(ctx, super, name, from)
	cloneMu.Unlock()
	if err != nil {
		t.Fatalf("testdb: create database: %v", err)
	}
	d := &DB{
		Name: name, AppURL: db.WithDatabase(roleURLs.App, name), OwnerURL: db.WithDatabase(roleURLs.Owner, name),
		SuperURL: db.WithDatabase(super, name),
	}
	if migrated {
		d.Pool, err = pgstore.Open(ctx, d.AppURL, pgstore.Options{MaxConns: 8})
		if err != nil {
			t.Fatalf("testdb: open pool: %v", err)
		}
	}
	t.Cleanup(func() {
		if d.Pool != nil {
			d.Pool.Close()
		}
		conn, err := pgx.Connect(ctx, super)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	return d
}

// Cluster is a private PostgreSQL cluster of one test, migrated, for tests
// that stop and start the database server itself (outages). It costs an
// initdb: use New unless the test needs the server to go away.
type Cluster struct {
	AppURL string // bcp_app on database "bcp"
	dir    string
	port   int
	srv    *pgserver.Server
}

// NewCluster starts a fresh cluster, stopped when the test ends.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	ctx := context.Background()
	// Not t.TempDir: its parent is private, and PostgreSQL runs as an
	// unprivileged user when the tests run as root.
	dir, err := os.MkdirTemp("", "bcp-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o755)
	c := &Cluster{dir: filepath.Join(dir, "pgdata")}
	t.Cleanup(func() {
		c.Stop(t)
		_ = os.RemoveAll(dir)
	})
	c.Start(t)
	urls, err := db.Bootstrap(ctx, c.srv.URL("postgres"), "bcp")
	if err != nil {
		t.Fatalf("testdb: bootstrap cluster: %v", err)
	}
	if _, err := db.MigrateUp(ctx, urls.Owner, nil); err != nil {
		t.Fatalf("testdb: migrate cluster: %v", err)
	}
	c.AppURL = urls.App
	return c
}

// Stop shuts the server down (fast shutdown: sessions are terminated).
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if c.srv == nil {
		return
	}
	if err := c.srv.Stop(); err != nil {
		t.Errorf("testdb: stop cluster: %v", err)
	}
	c.srv = nil
}

// Start starts the server (again), on the same port and socket, so
// AppURL keeps working.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	if c.srv != nil {
		return
	}
	srv, err := pgserver.Start(context.Background(), pgserver.Options{DataDir: c.dir, Port: c.port, NoFsync: true})
	if err != nil {
		t.Fatalf("testdb: start cluster: %v", err)
	}
	c.srv, c.port = srv, srv.Port
}
