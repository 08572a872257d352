package db

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
)

// Roles used on clusters the platform sets up itself (dev and tests).
const (
	OwnerRole = "bcp_owner" // owns schemas and tables, runs migrations
	AppRole   = "bcp_app"   // what services connect as: not owner, no BYPASSRLS
)

// URLs are the connection URLs Bootstrap hands out.
type URLs struct {
	Owner string // migrations
	App   string // services
}

// Bootstrap makes sure database name exists on the cluster reached through
// superURL (a superuser connection), with the owner and application login
// roles. Role passwords are regenerated on every call, so nothing but the
// cluster's own superuser secret is kept on disk.
func Bootstrap(ctx context.Context, superURL, name string) (URLs, error) {
	conn, err := pgx.Connect(ctx, superURL)
	if err != nil {
		return URLs{}, fmt.Errorf("connect as superuser: %w", err)
	}
	defer conn.Close(ctx)
	ownerPw, appPw := randomSecret(), randomSecret()
	for _, stmt := range []string{
		ensureRole(OwnerRole, "LOGIN NOSUPERUSER NOBYPASSRLS CREATEROLE"),
		fmt.Sprintf("ALTER ROLE %s PASSWORD '%s'", OwnerRole, ownerPw),
		ensureRole(AppRole, "LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE"),
		fmt.Sprintf("ALTER ROLE %s LOGIN PASSWORD '%s'", AppRole, appPw),
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return URLs{}, fmt.Errorf("bootstrap roles: %w", err)
		}
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return URLs{}, err
	}
	if !exists {
		if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s OWNER %s", pgx.Identifier{name}.Sanitize(), OwnerRole)); err != nil {
			return URLs{}, fmt.Errorf("create database: %w", err)
		}
	}
	if err := PrepareSearch(ctx, WithDatabase(superURL, name)); err != nil {
		return URLs{}, err
	}
	return URLs{
		Owner: withCredentials(superURL, OwnerRole, ownerPw, name),
		App:   withCredentials(superURL, AppRole, appPw, name),
	}, nil
}

// CreateDatabaseFromTemplate clones template into a new database (the fast
// path the tests use to give each test its own migrated database).
func CreateDatabaseFromTemplate(ctx context.Context, superURL, name, template string) error {
	conn, err := pgx.Connect(ctx, superURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s OWNER %s",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{template}.Sanitize(), OwnerRole))
	return err
}

// WithDatabase returns u pointing at database name with the same credentials.
func WithDatabase(u, name string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return u
	}
	parsed.Path = "/" + name
	return parsed.String()
}

func ensureRole(name, attrs string) string {
	return fmt.Sprintf(`DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '%[1]s') THEN CREATE ROLE %[1]s %[2]s; END IF;
END $$`, name, attrs)
}

func withCredentials(base, user, password, dbname string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.User = url.UserPassword(user, password)
	u.Path = "/" + dbname
	return u.String()
}

func randomSecret() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SearchSetup is what catalog search needs from a superuser, per database
// (deploy/README "Catalog search"). The extensions are trusted, so
// migration 00025 could create them as the owner, but only a superuser may
// mark functions LEAKPROOF: under forced row-level security the planner
// uses a search clause as an index condition only when its functions are
// leakproof, and without that every search reads the tenant's whole
// catalog. Both functions raise no error that depends on the row they are
// given, so evaluating them ahead of the tenant policy reveals nothing.
const SearchSetup = `CREATE EXTENSION IF NOT EXISTS unaccent SCHEMA public;
CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;
ALTER FUNCTION public.word_similarity_op(text, text) LEAKPROOF;`

// PrepareSearch runs SearchSetup on the database superURL names, as its
// superuser. Bootstrap calls it for the clusters the platform sets up.
func PrepareSearch(ctx context.Context, superURL string) error {
	conn, err := pgx.Connect(ctx, superURL)
	if err != nil {
		return fmt.Errorf("connect as superuser: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, SearchSetup); err != nil {
		return fmt.Errorf("prepare catalog search: %w", err)
	}
	return nil
}
