package apperr

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Errors PostgreSQL restarts produce must read as "unavailable" (retry),
// never "internal": agents retry the one and report the other as a bug.
func TestDatabaseOutagesAreUnavailable(t *testing.T) {
	for name, err := range map[string]error{
		"admin shutdown":       &pgconn.PgError{Code: "57P01"},
		"connection failure":   &pgconn.PgError{Code: "08006"},
		"connection exception": &pgconn.PgError{Code: "08000"},
	} {
		if got := As(err); got.Kind != KindUnavailable || got.Code != "unavailable" {
			t.Errorf("%s: kind %v code %q, want unavailable", name, got.Kind, got.Code)
		}
	}
	if got := As(errors.New("boom")); got.Kind != KindInternal {
		t.Errorf("plain error: kind %v, want internal", got.Kind)
	}
	if got := As(&pgconn.PgError{Code: "23505"}); got.Kind != KindAlreadyExists {
		t.Errorf("unique violation: kind %v, want already exists", got.Kind)
	}
}
