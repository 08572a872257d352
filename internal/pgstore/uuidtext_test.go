package pgstore

import (
	"testing"

	"github.com/google/uuid"
)

// set_config receives the tenant id as uuid.UUID.String writes it.
func TestUUIDText(t *testing.T) {
	for _, u := range []uuid.UUID{uuid.Nil, uuid.Max, uuid.MustParse("0123abcd-ef01-4567-89ab-cdef01234567"), uuid.New()} {
		var b [36]byte
		uuidText(&b, u)
		if got := string(b[:]); got != u.String() {
			t.Errorf("uuidText(%s) = %s", u, got)
		}
	}
}
