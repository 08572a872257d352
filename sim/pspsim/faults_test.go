package pspsim

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseFaults(t *testing.T) {
	f, err := ParseFaults(" error5xx=0.1, latency=200ms,reset_after_write=0.05,drop_webhook=0.1,duplicate_webhook=0.1,delay_webhook=0.2,webhook_delay=5s ")
	if err != nil {
		t.Fatal(err)
	}
	want := FaultSettings{Error5xx: 0.1, Latency: Duration(200 * time.Millisecond), LatencyShare: 1, ResetAfterWrite: 0.05,
		DropWebhook: 0.1, DuplicateWebhook: 0.1, DelayWebhook: 0.2, WebhookDelay: Duration(5 * time.Second)}
	if f != want {
		t.Errorf("parsed %+v, want %+v", f, want)
	}
	if s := f.String(); s != "latency=200ms,latency_share=1,error5xx=0.1,reset_after_write=0.05,drop_webhook=0.1,duplicate_webhook=0.1,delay_webhook=0.2,webhook_delay=5s" {
		t.Errorf("String() = %q", s)
	}
	if again, err := ParseFaults(f.String()); err != nil || again != f {
		t.Errorf("round trip: %+v %v", again, err)
	}
	if f, err := ParseFaults("delay_webhook=1,latency=1s,latency_share=0.5"); err != nil || f.WebhookDelay != Duration(defaultWebhookDelay) || f.LatencyShare != 0.5 {
		t.Errorf("defaults: %+v %v", f, err)
	}
	if f, err := ParseFaults(""); err != nil || f != (FaultSettings{}) {
		t.Errorf("empty: %+v %v", f, err)
	}
	for _, bad := range []string{"error5xx=1.5", "error5xx=-0.1", "latency=fast", "chaos=1", "error5xx", "latency=-1s"} {
		if _, err := ParseFaults(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestStartRefusesBadConfig(t *testing.T) {
	e := newEnv(t)
	cert, _ := e.devCA.IssueServer([]string{"127.0.0.1"}, time.Hour)
	base := Config{Pool: e.srv.cfg.Pool, PixAddr: "127.0.0.1:0", ControlAddr: "127.0.0.1:0", ServerCert: cert.TLS(), CA: e.simCA, AdminToken: "x"}
	for name, tweak := range map[string]func(*Config){
		"long location host": func(c *Config) { c.LocationHost = strings.Repeat("h", 40) + ".example" },
		"bad faults":         func(c *Config) { c.Faults = "error5xx=2" },
		"no admin token":     func(c *Config) { c.AdminToken = "" },
		"no CA":              func(c *Config) { c.CA = nil },
	} {
		cfg := base
		tweak(&cfg)
		if s, err := Start(context.Background(), cfg); err == nil {
			s.Stop()
			t.Errorf("%s: started", name)
		}
	}
}

// Provisioning issues the card API's key with the rest; the card API is
// on the control listener, authenticated by that key (not the admin
// token), behind the same faults.
func TestCardAPIIsMountedWithItsKey(t *testing.T) {
	e := newEnv(t)
	c := e.provision("cartoes").creds
	if !strings.HasPrefix(c.StripeSecretKey, "sk_test_") || c.StripeAPIURL != e.srv.ControlURL() {
		t.Fatalf("card credentials %q %q", c.StripeSecretKey, c.StripeAPIURL)
	}
	balance := func(key string) int {
		req, _ := http.NewRequest(http.MethodGet, c.StripeAPIURL+"/v1/balance", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := e.ctl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := balance(c.StripeSecretKey); st != http.StatusOK {
		t.Fatalf("balance with the account's key: %d", st)
	}
	if st := balance(adminToken); st != http.StatusUnauthorized {
		t.Fatalf("balance with the admin token: %d", st)
	}
	// Provisioning again rotates it.
	again := e.provision("cartoes").creds
	if st := balance(c.StripeSecretKey); st != http.StatusUnauthorized {
		t.Fatalf("the rotated-out key: %d", st)
	}
	if st := balance(again.StripeSecretKey); st != http.StatusOK {
		t.Fatalf("the new key: %d", st)
	}
	e.setFaults("error5xx=1")
	if st := balance(again.StripeSecretKey); st != http.StatusInternalServerError {
		t.Fatalf("card API under error5xx: %d", st)
	}
}

func TestAPIFaults(t *testing.T) {
	e := newEnv(t)
	m := e.provision("m").login()

	// 503 before anything is done; the control API is not affected.
	st := e.setFaults("error5xx=1")
	if st.Settings.Error5xx != 1 || st.Spec != "error5xx=1" {
		t.Errorf("faults = %+v", st)
	}
	problemOf(t, m.call("PUT", "/cob/"+txid(1), m.cobBody("1.00")), 503, "ServicoIndisponivel")
	problemOf(t, m.call("GET", "/cob/"+txid(1), nil), 503, "ServicoIndisponivel")
	if l := m.ledger(); len(l.Charges) != 0 {
		t.Errorf("a 503 PUT created %+v", l.Charges)
	}

	// Latency: the call still succeeds, and the fault is counted.
	e.setFaults("latency=20ms")
	problemOf(t, m.call("GET", "/cob/"+txid(1), nil), 404, "CobNaoEncontrado")

	// Reset after the write: applied and committed, answered by a cut
	// connection.
	e.setFaults("reset_after_write=1")
	if a, err := m.try("PUT", "/cob/"+txid(1), m.cobBody("1.00")); err == nil {
		t.Fatalf("PUT under reset_after_write answered %d %s", a.status, a.body)
	}
	// GETs are not cut; a refused write is answered.
	var c Cob
	if a := m.call("GET", "/cob/"+txid(1), nil); a.status != http.StatusOK {
		t.Fatalf("GET after the cut PUT: %d %s", a.status, a.body)
	} else if a.decode(t, &c); c.Status != "ATIVA" || c.Valor.Original != "1.00" {
		t.Errorf("the cut PUT left %+v", c)
	}
	problemOf(t, m.call("PUT", "/cob/"+txid(2), m.cobBody("0.00")), 400, "CobOperacaoInvalida")
	if _, err := m.try("PATCH", "/cob/"+txid(1), map[string]any{"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"}); err == nil {
		t.Error("PATCH under reset_after_write was answered")
	}

	var got FaultsState
	e.control("GET", "/sim/v1/faults", nil, &got)
	want := map[string]int64{FaultError5xx: 2, FaultLatency: 1, FaultResetAfterWrite: 2}
	for kind, n := range want {
		if got.Injected[kind] != n {
			t.Errorf("injected %s = %d, want %d", kind, got.Injected[kind], n)
		}
		if v := e.faultMetric(kind); v != float64(n) {
			t.Errorf("bcp_pspsim_faults_total{kind=%q} = %v, want %d", kind, v, n)
		}
	}
}

func TestRefundRejectedFault(t *testing.T) {
	e := newEnv(t)
	m := e.provision("m").login()
	m.createCob(txid(1), "5.00")
	px := m.pay(txid(1), "")
	e.setFaults("refund_rejected=1")
	var d Devolucao
	r := m.call("PUT", "/pix/"+px.EndToEndID+"/devolucao/r1", map[string]any{"valor": "5.00"})
	r.decode(t, &d)
	if r.status != http.StatusCreated || d.Status != "NAO_REALIZADO" || d.Motivo == "" || d.Horario.Liquidacao != nil {
		t.Errorf("rejected refund = %d %+v", r.status, d)
	}
	// A refund not made gives nothing back: the whole amount can still be
	// refunded.
	e.setFaults("")
	if r := m.call("PUT", "/pix/"+px.EndToEndID+"/devolucao/r2", map[string]any{"valor": "5.00"}); r.status != http.StatusCreated {
		t.Errorf("refund after a rejected one: %d %s", r.status, r.body)
	}
	if v := e.faultMetric(FaultRefundRejected); v != 1 {
		t.Errorf("refund_rejected counted %v", v)
	}
}

func TestWebhookFaults(t *testing.T) {
	e := newEnv(t)
	m := e.provision("m").login()
	rcv := e.receiver(0)
	if r := m.call("PUT", "/webhook/"+m.creds.Chave, map[string]any{"webhookUrl": rcv.srv.URL}); r.status != http.StatusOK {
		t.Fatal(r.status)
	}
	pay := func(n int) Pix {
		m.createCob(txid(n), "1.00")
		return m.pay(txid(n), "")
	}

	// Dropped: marked done, never sent.
	e.setFaults("drop_webhook=1")
	dropped := pay(1)
	l := m.waitLedger("the dropped delivery", allDone(dropped.EndToEndID, 1))
	if d := deliveriesOf(l, dropped.EndToEndID)[0]; d.Status != "dropped" || d.Sends != 0 || d.Attempts != 0 {
		t.Errorf("dropped delivery = %+v", d)
	}

	// Duplicated: sent twice, the same body.
	e.setFaults("duplicate_webhook=1")
	dup := pay(2)
	l = m.waitLedger("the duplicated delivery", allDone(dup.EndToEndID, 1))
	if d := deliveriesOf(l, dup.EndToEndID)[0]; d.Status != "delivered" || d.Sends != 2 || !d.Duplicated || d.Attempts != 1 {
		t.Errorf("duplicated delivery = %+v", d)
	}
	got := rcv.notifications()
	if len(got) != 2 || string(got[0].body) != string(got[1].body) || got[0].pix(t)[0].EndToEndID != dup.EndToEndID {
		t.Fatalf("receiver got %d notifications, want the duplicate twice", len(got))
	}

	// Delayed: held back an hour (of the simulator's clock), so a later
	// payment is notified first.
	e.setFaults("delay_webhook=1,webhook_delay=1h")
	late := pay(3)
	l = m.waitLedger("the delayed delivery", func(l Ledger) bool {
		ds := deliveriesOf(l, late.EndToEndID)
		return len(ds) == 1 && ds[0].Delayed
	})
	if d := deliveriesOf(l, late.EndToEndID)[0]; d.Status != "pending" || d.Sends != 0 || d.NextAttemptAt.Before(e.clock.Now().Add(59*time.Minute)) {
		t.Errorf("delayed delivery = %+v", d)
	}
	e.setFaults("")
	early := pay(4)
	m.waitLedger("the later payment's delivery", allDone(early.EndToEndID, 1))
	e.clock.Advance(time.Hour + time.Minute)
	l = m.waitLedger("the delayed delivery, at last", allDone(late.EndToEndID, 1))
	if d := deliveriesOf(l, late.EndToEndID)[0]; d.Status != "delivered" || !d.Delayed || d.Sends != 1 {
		t.Errorf("delayed delivery = %+v", d)
	}
	var order []string
	for _, n := range rcv.notifications() {
		order = append(order, n.pix(t)[0].EndToEndID)
	}
	if strings.Join(order, ",") != strings.Join([]string{dup.EndToEndID, dup.EndToEndID, early.EndToEndID, late.EndToEndID}, ",") {
		t.Errorf("notified in order %v, want the duplicate twice, then the later payment, then the delayed one", order)
	}

	var st FaultsState
	e.control("GET", "/sim/v1/faults", nil, &st)
	for _, kind := range []string{FaultDropWebhook, FaultDuplicateWebhook, FaultDelayWebhook} {
		if st.Injected[kind] != 1 || e.faultMetric(kind) != 1 {
			t.Errorf("%s counted %d (metric %v), want 1", kind, st.Injected[kind], e.faultMetric(kind))
		}
	}
}

func TestFaultsFromConfigAndJSON(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Faults = "error5xx=1" })
	m := e.provision("m").login()
	problemOf(t, m.call("GET", "/cob/"+txid(1), nil), 503, "ServicoIndisponivel")
	var st FaultsState
	if code, b := e.control("PUT", "/sim/v1/faults", map[string]any{"latency": "5ms", "drop_webhook": 0.5}, &st); code != http.StatusOK {
		t.Fatalf("PUT faults JSON: %d %s", code, b)
	}
	if st.Settings != (FaultSettings{Latency: Duration(5 * time.Millisecond), LatencyShare: 1, DropWebhook: 0.5}) || st.Injected[FaultError5xx] != 1 {
		t.Errorf("faults = %+v", st)
	}
	for _, bad := range []any{map[string]any{"error5xx": 2}, map[string]any{"chaos": 1}, map[string]any{"spec": "x=1"}, map[string]any{"spec": "error5xx=1", "latency": "1s"}} {
		if code, _ := e.control("PUT", "/sim/v1/faults", bad, nil); code != http.StatusBadRequest {
			t.Errorf("PUT faults %v: %d", bad, code)
		}
	}
	if a := m.call("GET", "/cob/"+txid(1), nil); a.status != http.StatusNotFound {
		t.Errorf("after the faults changed: %d", a.status)
	}
}
