package pspsim

import (
	"bytes"
	"crypto/x509"
	"net/http"
	"testing"

	"github.com/bcpdev/bcp/services/payments/pix/pixcontract"
)

// delivered finds the deliveries of a Pix in the ledger.
func deliveriesOf(l Ledger, e2eid string) []Delivery {
	var out []Delivery
	for _, d := range l.Deliveries {
		for _, id := range d.E2EIDs {
			if id == e2eid {
				out = append(out, d)
			}
		}
	}
	return out
}

func allDone(e2eid string, n int) func(Ledger) bool {
	return func(l Ledger) bool {
		ds := deliveriesOf(l, e2eid)
		if len(ds) != n {
			return false
		}
		for _, d := range ds {
			if d.Status == "pending" {
				return false
			}
		}
		return true
	}
}

func TestWebhookDeliveredOverMTLS(t *testing.T) {
	e := newEnv(t)
	contract, err := pixcontract.Load()
	if err != nil {
		t.Fatal(err)
	}
	m := e.provision("m").login()
	rcv := e.receiver(0)
	// A trailing slash is trimmed before /pix is appended.
	if r := m.call("PUT", "/webhook/"+m.creds.Chave, map[string]any{"webhookUrl": rcv.srv.URL + "/hooks/"}); r.status != http.StatusOK {
		t.Fatalf("PUT /webhook: %d %s", r.status, r.body)
	}
	var wh Webhook
	r := m.call("GET", "/webhook/"+m.creds.Chave, nil)
	r.decode(t, &wh)
	if r.status != http.StatusOK || wh.WebhookURL != rcv.srv.URL+"/hooks/" || wh.Chave != m.creds.Chave || len(wh.CNPJ) != 14 || wh.Criacao.IsZero() {
		t.Errorf("GET /webhook = %d %+v", r.status, wh)
	}

	m.createCob(txid(1), "25.00")
	px := m.pay(txid(1), "")
	l := m.waitLedger("the payment's delivery", allDone(px.EndToEndID, 1))
	d := deliveriesOf(l, px.EndToEndID)[0]
	if d.Status != "delivered" || d.Reason != "pix" || d.Attempts != 1 || d.Sends != 1 || d.LastStatus == nil || *d.LastStatus != 200 ||
		d.URL != rcv.srv.URL+"/hooks/" || d.Chave != m.creds.Chave || d.DoneAt == nil {
		t.Errorf("delivery = %+v", d)
	}
	got := rcv.notifications()
	if len(got) != 1 {
		t.Fatalf("receiver got %d notifications", len(got))
	}
	n := got[0]
	if n.path != "/hooks/pix" || n.ctype != "application/json" || n.clientCN != WebhookCertCN {
		t.Errorf("notification path %q, Content-Type %q, client certificate %q", n.path, n.ctype, n.clientCN)
	}
	if err := contract.ValidateWebhook(n.body); err != nil {
		t.Errorf("webhook body breaks the contract: %v", err)
	}
	if ps := n.pix(t); len(ps) != 1 || ps[0].EndToEndID != px.EndToEndID || ps[0].Txid != txid(1) || ps[0].Valor != "25.00" || !ps[0].Horario.Equal(px.Horario) {
		t.Errorf("notified Pix = %+v", ps)
	}

	// A devolução reaching its final status is notified with the Pix.
	if r := m.call("PUT", "/pix/"+px.EndToEndID+"/devolucao/d1", map[string]any{"valor": "5.00"}); r.status != http.StatusCreated {
		t.Fatalf("refund: %d %s", r.status, r.body)
	}
	l = m.waitLedger("the devolução's delivery", allDone(px.EndToEndID, 2))
	if ds := deliveriesOf(l, px.EndToEndID); ds[1].Reason != "devolucao" || ds[1].Status != "delivered" {
		t.Errorf("devolução delivery = %+v", ds[1])
	}
	got = rcv.notifications()
	if ps := got[1].pix(t); len(got) != 2 || len(ps) != 1 || len(ps[0].Devolucoes) != 1 || ps[0].Devolucoes[0].ID != "d1" || ps[0].Devolucoes[0].Status != "DEVOLVIDO" {
		t.Errorf("devolução notification = %s", got[1].body)
	}
	if err := contract.ValidateWebhook(got[1].body); err != nil {
		t.Errorf("devolução webhook breaks the contract: %v", err)
	}

	// A repeat asked for through the control API.
	var queued map[string]int64
	if st, b := e.control("POST", "/sim/v1/accounts/"+m.creds.ClientID+"/pix/"+px.EndToEndID+"/notify", nil, &queued); st != http.StatusAccepted || queued["delivery_id"] == 0 {
		t.Fatalf("notify: %d %s", st, b)
	}
	m.waitLedger("the repeat", allDone(px.EndToEndID, 3))
	if got := rcv.notifications(); len(got) != 3 || !bytes.Equal(got[2].body, got[1].body) {
		t.Errorf("repeat: %d notifications", len(got))
	}

	// Deleted: the next payment is not sent, and the ledger says why.
	if r := m.call("DELETE", "/webhook/"+m.creds.Chave, nil); r.status != http.StatusNoContent {
		t.Fatalf("DELETE /webhook: %d", r.status)
	}
	m.createCob(txid(2), "1.00")
	px2 := m.pay(txid(2), "")
	l = m.waitLedger("the unsent delivery", allDone(px2.EndToEndID, 1))
	if d := deliveriesOf(l, px2.EndToEndID)[0]; d.Status != "no_webhook" || d.Attempts != 0 || d.Sends != 0 {
		t.Errorf("delivery without webhook = %+v", d)
	}
	if n := len(rcv.notifications()); n != 3 {
		t.Errorf("receiver got %d notifications, want 3", n)
	}
}

func TestWebhookRetriedUntilAccepted(t *testing.T) {
	e := newEnv(t)
	m := e.provision("m").login()
	rcv := e.receiver(2) // 500, 500, then 200
	if r := m.call("PUT", "/webhook/"+m.creds.Chave, map[string]any{"webhookUrl": rcv.srv.URL}); r.status != http.StatusOK {
		t.Fatal(r.status)
	}
	m.createCob(txid(1), "3.00")
	px := m.pay(txid(1), "")
	l := m.waitLedger("the delivery", allDone(px.EndToEndID, 1))
	d := deliveriesOf(l, px.EndToEndID)[0]
	if d.Status != "delivered" || d.Attempts != 3 || d.Sends != 3 || *d.LastStatus != 200 || d.LastError != "" {
		t.Errorf("delivery = %+v", d)
	}
	if n := len(rcv.notifications()); n != 3 {
		t.Errorf("receiver got %d posts, want 3", n)
	}
}

func TestWebhookToAnUntrustedReceiverIsNotSent(t *testing.T) {
	// The receiver's server certificate (dev CA) is not trusted: nothing
	// is sent, the error is recorded and the delivery stays pending.
	untrusting := x509.NewCertPool()
	e := newEnv(t, func(c *Config) { c.WebhookRootCAs = untrusting })
	m := e.provision("m").login()
	rcv := e.receiver(0)
	if r := m.call("PUT", "/webhook/"+m.creds.Chave, map[string]any{"webhookUrl": rcv.srv.URL}); r.status != http.StatusOK {
		t.Fatal(r.status)
	}
	m.createCob(txid(1), "3.00")
	px := m.pay(txid(1), "")
	l := m.waitLedger("a failed attempt", func(l Ledger) bool {
		ds := deliveriesOf(l, px.EndToEndID)
		return len(ds) == 1 && ds[0].Attempts >= 1
	})
	if d := deliveriesOf(l, px.EndToEndID)[0]; d.Status != "pending" || d.LastStatus != nil || d.LastError == "" {
		t.Errorf("delivery = %+v", d)
	}
	if n := len(rcv.notifications()); n != 0 {
		t.Errorf("receiver got %d posts", n)
	}
}

func TestOrphanPix(t *testing.T) {
	e := newEnv(t)
	m := e.provision("m").login()
	rcv := e.receiver(0)
	if r := m.call("PUT", "/webhook/"+m.creds.Chave, map[string]any{"webhookUrl": rcv.srv.URL}); r.status != http.StatusOK {
		t.Fatal(r.status)
	}
	var withTxid, without Pix
	if st, b := e.control("POST", "/sim/v1/accounts/"+m.creds.ClientID+"/pix", OrphanPixRequest{Valor: "7.00", Txid: "estatico1"}, &withTxid); st != http.StatusCreated {
		t.Fatalf("orphan: %d %s", st, b)
	}
	if st, b := e.control("POST", "/sim/v1/accounts/"+m.creds.ClientID+"/pix", OrphanPixRequest{Valor: "8.00"}, &without); st != http.StatusCreated {
		t.Fatalf("orphan without txid: %d %s", st, b)
	}
	l := m.waitLedger("the orphan's delivery", allDone(withTxid.EndToEndID, 1))
	if len(deliveriesOf(l, without.EndToEndID)) != 0 || len(l.Pix) != 2 || len(l.Charges) != 0 {
		t.Errorf("ledger = %+v", l)
	}
	if got := rcv.notifications(); len(got) != 1 || got[0].pix(t)[0].Txid != "estatico1" {
		t.Errorf("notifications = %d", len(got))
	}
	var p Pix
	m.call("GET", "/pix/"+without.EndToEndID, nil).decode(t, &p)
	if p.Valor != "8.00" || p.Txid != "" || p.Chave != m.creds.Chave {
		t.Errorf("orphan = %+v", p)
	}
	// A Pix without txid is never notified; a charge's txid is paid, not
	// orphaned.
	if st, _ := e.control("POST", "/sim/v1/accounts/"+m.creds.ClientID+"/pix/"+without.EndToEndID+"/notify", nil, nil); st != http.StatusConflict {
		t.Errorf("notify a Pix without txid: %d", st)
	}
	m.createCob(txid(1), "1.00")
	if st, _ := e.control("POST", "/sim/v1/accounts/"+m.creds.ClientID+"/pix", OrphanPixRequest{Valor: "1.00", Txid: txid(1)}, nil); st != http.StatusConflict {
		t.Errorf("orphan with a charge's txid: %d", st)
	}
	if st, _ := e.control("POST", "/sim/v1/accounts/"+m.creds.ClientID+"/pix", OrphanPixRequest{Valor: "1.0"}, nil); st != http.StatusBadRequest {
		t.Errorf("orphan with a bad valor: %d", st)
	}
	// A charge made later under an orphan's txid is not paid by it.
	if st, b := e.control("POST", "/sim/v1/accounts/"+m.creds.ClientID+"/pix", OrphanPixRequest{Valor: "4.00", Txid: txid(50)}, nil); st != http.StatusCreated {
		t.Fatalf("orphan: %d %s", st, b)
	}
	m.createCob(txid(50), "4.00")
	var c Cob
	m.call("GET", "/cob/"+txid(50), nil).decode(t, &c)
	if c.Status != "ATIVA" || len(c.Pix) != 0 {
		t.Errorf("charge sharing an orphan's txid = %+v", c)
	}
	paid := m.pay(txid(50), "")
	m.call("GET", "/cob/"+txid(50), nil).decode(t, &c)
	if len(c.Pix) != 1 || c.Pix[0].EndToEndID != paid.EndToEndID {
		t.Errorf("paid charge sharing an orphan's txid = %+v", c)
	}
	for _, lc := range m.ledger().Charges {
		if lc.Txid == txid(50) && (len(lc.Pix) != 1 || lc.Pix[0].EndToEndID != paid.EndToEndID) {
			t.Errorf("ledger charge = %+v", lc)
		}
	}
}
