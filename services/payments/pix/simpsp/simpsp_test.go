package simpsp_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/services/payments/pix"
	"github.com/bcpdev/bcp/services/payments/pix/brcode"
	"github.com/bcpdev/bcp/services/payments/pix/simpsp"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func cobRequest(valor string, expiracao int, chave, msg string) pix.CobSolicitada {
	var r pix.CobSolicitada
	r.Calendario.Expiracao = expiracao
	r.Valor.Original = valor
	r.Chave = chave
	r.SolicitacaoPagador = msg
	return r
}

// PUT /cob/{txid}: a new txid creates the charge (one statement), the same
// PUT again answers with it unchanged, a different one revises it, and
// GET shows what PUT answered. Another receiver, or another tenant,
// cannot touch it.
func TestCreateCharge(t *testing.T) {
	db := testdb.New(t)
	now := time.Date(2026, 3, 9, 14, 0, 0, 0, time.UTC)
	sim := simpsp.New(db.Pool, func() time.Time { return now }, nil, nil, nil)
	ctx := tenancy.With(context.Background(), uuid.New())
	psp := sim.Client(simpsp.Receiver{HandlerID: "pix_a", MerchantName: "Loja Ágil", MerchantCity: "São Paulo", LocationHost: "loja.example"})
	const txid = "TXIDcreatecharge0000000000001"
	const key = "5b2e3e35-2f5e-4b34-9d1a-0d5a2c2b6f10"

	cob, err := psp.CreateCharge(ctx, txid, cobRequest("123.45", 1800, key, "Pedido chk_1"))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if cob.Txid != txid || cob.Revisao != 0 || cob.Status != pix.StatusAtiva || cob.Valor.Original != "123.45" ||
		cob.Calendario.Expiracao != 1800 || !cob.Calendario.Criacao.Equal(now) || cob.Chave != key ||
		cob.SolicitacaoPagador != "Pedido chk_1" || len(cob.Pix) != 0 {
		t.Fatalf("created cob: %+v", cob)
	}
	code, err := brcode.Parse(cob.PixCopiaECola)
	if err != nil || code.Amount != 12345 || code.URL != cob.Location || code.MerchantName != "LOJA AGIL" || code.MerchantCity != "SAO PAULO" {
		t.Fatalf("BR Code %q: %+v %v (location %q)", cob.PixCopiaECola, code, err, cob.Location)
	}
	if got, err := psp.GetCharge(ctx, txid); err != nil || !reflect.DeepEqual(got, cob) {
		t.Fatalf("get: %+v %v, want %+v", got, err, cob)
	}

	// The same PUT (a retry) changes nothing.
	if again, err := psp.CreateCharge(ctx, txid, cobRequest("123.45", 1800, key, "Pedido chk_1")); err != nil || !reflect.DeepEqual(again, cob) {
		t.Fatalf("retry: %+v %v, want %+v", again, err, cob)
	}
	// Another amount revises the charge: revisao 1, a new BR Code at the
	// same location.
	rev, err := psp.CreateCharge(ctx, txid, cobRequest("99.90", 1800, key, "Pedido chk_1"))
	if err != nil || rev.Revisao != 1 || rev.Valor.Original != "99.90" || rev.Location != cob.Location || rev.PixCopiaECola == cob.PixCopiaECola {
		t.Fatalf("revision: %+v %v", rev, err)
	}
	if code, err := brcode.Parse(rev.PixCopiaECola); err != nil || code.Amount != 9990 {
		t.Fatalf("revised BR Code: %+v %v", code, err)
	}
	if got, err := psp.GetCharge(ctx, txid); err != nil || !reflect.DeepEqual(got, rev) {
		t.Fatalf("get after revision: %+v %v, want %+v", got, err, rev)
	}

	// The txid is this receiver's.
	other := sim.Client(simpsp.Receiver{HandlerID: "pix_b"})
	if _, err := other.CreateCharge(ctx, txid, cobRequest("1.00", 60, key, "")); !errors.Is(err, pix.ErrOperacaoInvalida) {
		t.Fatalf("another receiver's PUT: %v", err)
	}
	// Another tenant neither sees it nor collides with it.
	ctx2 := tenancy.With(context.Background(), uuid.New())
	if _, err := psp.GetCharge(ctx2, txid); !errors.Is(err, pix.ErrCobNaoEncontrado) {
		t.Fatalf("other tenant's GET: %v", err)
	}
	if c2, err := psp.CreateCharge(ctx2, txid, cobRequest("5.00", 60, key, "")); err != nil || c2.Revisao != 0 || c2.Valor.Original != "5.00" {
		t.Fatalf("other tenant's PUT: %+v %v", c2, err)
	}
	if got, err := psp.GetCharge(ctx, txid); err != nil || got.Valor.Original != "99.90" {
		t.Fatalf("first tenant's charge after the other's PUT: %+v %v", got, err)
	}
	// A removed charge cannot be revised.
	if removed, err := psp.RemoveCharge(ctx, txid); err != nil || removed.Status != pix.StatusRemovidaRecebedor {
		t.Fatalf("remove: %+v %v", removed, err)
	}
	if _, err := psp.CreateCharge(ctx, txid, cobRequest("99.90", 1800, key, "Pedido chk_1")); !errors.Is(err, pix.ErrOperacaoInvalida) {
		t.Fatalf("PUT on a removed charge: %v", err)
	}
	// No tenant, no charge.
	if _, err := psp.CreateCharge(context.Background(), "TXIDcreatecharge0000000000002", cobRequest("1.00", 60, key, "")); err == nil {
		t.Fatal("created a charge without a tenant")
	}
}

// Concurrent identical PUTs of a new txid make one charge and all answer
// with it, including those whose insert found the winner's row.
func TestConcurrentCreateCharge(t *testing.T) {
	db := testdb.New(t)
	now := time.Date(2026, 3, 9, 14, 0, 0, 0, time.UTC)
	sim := simpsp.New(db.Pool, func() time.Time { return now }, nil, nil, nil)
	ctx := tenancy.With(context.Background(), uuid.New())
	psp := sim.Client(simpsp.Receiver{HandlerID: "pix_a"})
	for round := range 5 {
		txid := "TXIDconcurrentcreate00000000" + string(rune('a'+round))
		const n = 8
		var wg sync.WaitGroup
		got := make([]pix.Cob, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				got[i], errs[i] = psp.CreateCharge(ctx, txid, cobRequest("10.00", 600, "chave@example.com", ""))
			})
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil || got[i].Revisao != 0 || got[i].PixCopiaECola != got[0].PixCopiaECola || got[i].Location != got[0].Location {
				t.Fatalf("round %d call %d: %+v %v (first %+v)", round, i, got[i], errs[i], got[0])
			}
		}
	}
}

// GET /cob/{txid} and GET /pix/{e2eid} show a paid charge's Pix with its
// refunds (devoluções) in order, exactly as the refund calls answered them,
// each read in one statement.
func TestReadsShowPixAndRefunds(t *testing.T) {
	db := testdb.New(t)
	now := time.Date(2026, 3, 9, 14, 0, 0, 0, time.UTC)
	sim := simpsp.New(db.Pool, func() time.Time { return now }, nil, nil, nil)
	tid := uuid.New()
	ctx := tenancy.With(context.Background(), tid)
	psp := sim.Client(simpsp.Receiver{HandlerID: "pix_a", MerchantName: "Loja", MerchantCity: "Recife", LocationHost: "loja.example"})
	const txid = "TXIDreadsshowpix0000000000001"
	const e2e = "E12345678202603091400abcdefghijk"
	if _, err := psp.CreateCharge(ctx, txid, cobRequest("123.45", 1800, "5b2e3e35-2f5e-4b34-9d1a-0d5a2c2b6f10", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := psp.GetPix(ctx, e2e); !errors.Is(err, pix.ErrPixNaoEncontrado) {
		t.Fatalf("GetPix before the payment: %v", err)
	}
	// The payment as the simulated buyer makes it (Pay also queues its
	// webhook, which needs the job queue this test does not start).
	conn, err := pgx.Connect(context.Background(), db.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	paidAt := now.Add(90*time.Second + 123456*time.Microsecond)
	if _, err := conn.Exec(context.Background(), `INSERT INTO payments.sim_pix (tenant_id, e2e_id, txid, handler_id, valor, horario, info_pagador)
		VALUES ($1, $2, $3, 'pix_a', '123.45', $4, 'Pagamento simulado')`, tid, e2e, txid, paidAt); err != nil {
		t.Fatal(err)
	}
	paid := pix.Pix{EndToEndID: e2e, Txid: txid, Valor: "123.45", Horario: paidAt, InfoPagador: "Pagamento simulado"}
	cob, err := psp.GetCharge(ctx, txid)
	if err != nil || len(cob.Pix) != 1 || !reflect.DeepEqual(cob.Pix[0], paid) {
		t.Fatalf("charge: %+v %v, want its Pix %+v", cob.Pix, err, paid)
	}
	if got, err := psp.GetPix(ctx, e2e); err != nil || !reflect.DeepEqual(got, paid) {
		t.Fatalf("Pix: %+v %v, want %+v", got, err, paid)
	}

	// Two refunds, a minute apart.
	var want []pix.Devolucao
	for i, valor := range []string{"10.00", "3.45"} {
		now = now.Add(time.Minute)
		d, err := psp.Refund(ctx, e2e, "dev"+strconv.Itoa(i), pix.DevolucaoSolicitada{Valor: valor, Descricao: "parcial"})
		if err != nil || d.Valor != valor || d.Status != pix.DevolucaoDevolvido || d.Horario.Liquidacao == nil {
			t.Fatalf("refund %s: %+v %v", valor, d, err)
		}
		want = append(want, d)
	}
	paid.Devolucoes = want
	got, err := psp.GetPix(ctx, e2e)
	if err != nil || !reflect.DeepEqual(got, paid) {
		t.Fatalf("Pix with refunds: %+v %v, want %+v", got, err, paid)
	}
	if cob, err := psp.GetCharge(ctx, txid); err != nil || len(cob.Pix) != 1 || !reflect.DeepEqual(cob.Pix[0], paid) {
		t.Fatalf("charge with refunds: %+v %v, want %+v", cob.Pix, err, paid)
	}
	// Another tenant sees neither.
	other := tenancy.With(context.Background(), uuid.New())
	if _, err := psp.GetPix(other, e2e); !errors.Is(err, pix.ErrPixNaoEncontrado) {
		t.Fatalf("other tenant's GetPix: %v", err)
	}
}
