package pgstore

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/bcpdev/bcp/internal/apperr"
)

func TestConnLostIsUnavailable(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("query: %w", io.ErrUnexpectedEOF),
		fmt.Errorf("commit: %w", io.EOF),
		errors.New("conn closed"),
	} {
		if got := apperr.As(connLost(err)); got.Kind != apperr.KindUnavailable {
			t.Errorf("%v: kind %v, want unavailable", err, got.Kind)
		}
	}
	nf := &apperr.Error{Kind: apperr.KindNotFound, Code: "not_found", Err: io.EOF}
	if got := connLost(nf); got != error(nf) {
		t.Errorf("a classified error changed: %v", got)
	}
	if got := apperr.As(connLost(errors.New("boom"))); got.Kind != apperr.KindInternal {
		t.Errorf("plain error: kind %v, want internal", got.Kind)
	}
	if connLost(nil) != nil {
		t.Error("nil changed")
	}
}
