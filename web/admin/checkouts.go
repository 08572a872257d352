package admin

import (
	"encoding/json"
	"net/http"

	"connectrpc.com/connect"

	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

type checkoutsData struct {
	Status    string
	Statuses  []string
	Checkouts []*checkoutv1.CheckoutSummary
	Next      string
}

var checkoutStatuses = bcp.Statuses()

func (a *Admin) checkouts(rw http.ResponseWriter, r *http.Request) {
	status := r.URL.Query().Get("status")
	known := status == ""
	for _, s := range checkoutStatuses {
		known = known || s == status
	}
	if !known {
		status = ""
	}
	resp, err := a.opts.Checkout.ListCheckouts(r.Context(), connect.NewRequest(&checkoutv1.ListCheckoutsRequest{Status: status, PageSize: 50, PageToken: r.URL.Query().Get("pagina")}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	d := checkoutsData{Status: status, Statuses: checkoutStatuses, Checkouts: resp.Msg.GetCheckouts(), Next: resp.Msg.GetNextPageToken()}
	a.render(rw, r, http.StatusOK, "checkouts", a.newPage(r, "Checkouts", "checkouts", d))
}

func (a *Admin) checkout(rw http.ResponseWriter, r *http.Request) {
	resp, err := a.opts.Checkout.GetCheckout(r.Context(), connect.NewRequest(&checkoutv1.GetCheckoutRequest{Id: r.PathValue("id")}))
	if err != nil {
		a.serviceError(rw, r, err)
		return
	}
	if resp.Msg.GetResult().GetErrorResponse() {
		a.errorPage(rw, r, http.StatusNotFound)
		return
	}
	c := &bcp.Checkout{}
	if err := json.Unmarshal(resp.Msg.GetResult().GetCheckoutJson(), c); err != nil {
		a.serviceError(rw, r, err)
		return
	}
	a.render(rw, r, http.StatusOK, "checkout", a.newPage(r, "Checkout "+c.ID, "checkouts", c))
}
