package pages

import (
	"errors"
	"net/http"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/apperr"
)

// ErrorData is what an error page template shows.
type ErrorData struct {
	Status  int
	Message string
}

// Error builds the data of an error page for status, in Portuguese. A 503
// also asks the browser to come back shortly.
func Error(w http.ResponseWriter, status int) ErrorData {
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "2")
	}
	return ErrorData{Status: status, Message: errorText[status]}
}

var errorText = map[int]string{
	http.StatusBadRequest:          "Pedido inválido.",
	http.StatusNotFound:            "Página não encontrada.",
	http.StatusForbidden:           "Ação recusada: o formulário expirou ou não veio desta página. Recarregue e tente de novo.",
	http.StatusServiceUnavailable:  "Serviço indisponível no momento. Tente de novo em instantes.",
	http.StatusInternalServerError: "Erro interno.",
}

// AppErr classifies an error a service call returned (a connect error
// carrying the service's code, or a local one).
func AppErr(err error) *apperr.Error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return apperr.FromConnect(ce)
	}
	return apperr.As(err)
}

// ServiceErrorStatus is the page status for a failed service call, from
// apperr's one table; whatever may be retried as is asks the browser to
// come back (503, with Retry-After from Error).
func ServiceErrorStatus(err error) int {
	w, _ := apperr.WireOf(AppErr(err))
	if w.Retry {
		return http.StatusServiceUnavailable
	}
	return w.HTTPStatus
}
