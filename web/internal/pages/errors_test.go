package pages

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
)

func TestServiceErrorStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{apperr.ToConnect(&apperr.Error{Kind: apperr.KindNotFound, Code: "not_found"}), http.StatusNotFound},
		{connect.NewError(connect.CodeUnavailable, errors.New("down")), http.StatusServiceUnavailable},
		{connect.NewError(connect.CodeInternal, errors.New("boom")), http.StatusInternalServerError},
		{errors.New("local"), http.StatusInternalServerError},
	} {
		if got := ServiceErrorStatus(c.err); got != c.want {
			t.Errorf("%v: status %d, want %d", c.err, got, c.want)
		}
	}
}

func TestErrorUnavailableAsksToRetry(t *testing.T) {
	rec := httptest.NewRecorder()
	d := Error(rec, http.StatusServiceUnavailable)
	if d.Status != 503 || d.Message == "" || rec.Header().Get("Retry-After") != "2" {
		t.Fatalf("503 page: %+v, Retry-After %q", d, rec.Header().Get("Retry-After"))
	}
	rec = httptest.NewRecorder()
	if d := Error(rec, http.StatusNotFound); d.Message != "Página não encontrada." || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("404 page: %+v", d)
	}
}
