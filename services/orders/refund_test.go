package orders_test

import (
	"errors"
	"sync"
	"testing"

	"connectrpc.com/connect"

	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

func TestRefundPartialThenFull(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	id := e.create(ctx, "chk_1", "").GetOrderId() // total 12282

	r, err := e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, Amount: 2000, Reason: "Caneca quebrada",
		LineItems: []*ordersv1.LineQuantity{{Id: "li_2", Quantity: 1}}}))
	if err != nil {
		t.Fatal(err)
	}
	validateOrder(t, r.Msg.GetOrderJson())
	if r.Msg.GetStatus() != bcp.AdjustmentCompleted || r.Msg.GetAmount() != 2000 || r.Msg.GetRefundId() == "" {
		t.Fatalf("partial refund: %+v", r.Msg)
	}
	calls := e.payments.refunds()
	if len(calls) != 1 || calls[0].GetAttemptId() != "pay_chk_1" || calls[0].GetRefundId() != r.Msg.GetRefundId() || calls[0].GetAmount() != 2000 {
		t.Fatalf("payments saw %+v", calls)
	}
	o := decode(t, r.Msg.GetOrderJson())
	if len(o.Adjustments) != 1 {
		t.Fatalf("adjustments %+v", o.Adjustments)
	}
	a := o.Adjustments[0]
	if a.ID != r.Msg.GetRefundId() || a.Type != bcp.AdjustmentRefund || a.Status != bcp.AdjustmentCompleted || a.Description != "Caneca quebrada" ||
		len(a.Totals) != 1 || a.Totals[0].Amount != -2000 || len(a.LineItems) != 1 || a.LineItems[0] != (bcp.LineItemRef{ID: "li_2", Quantity: -1}) {
		t.Fatalf("adjustment %+v", a)
	}

	// More than what is left is refused, and nothing reaches payments.
	_, err = e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, Amount: 10283}))
	wantCode(t, err, connect.CodeInvalidArgument, "refund_exceeds_remaining")

	// 0 = everything left.
	r, err = e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, RefundId: "full-1"}))
	if err != nil || r.Msg.GetStatus() != bcp.AdjustmentCompleted || r.Msg.GetAmount() != 10282 || r.Msg.GetRefundId() != "full-1" {
		t.Fatalf("full refund: %v %+v", err, r.Msg)
	}
	validateOrder(t, r.Msg.GetOrderJson())
	_, err = e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, Amount: 1}))
	wantCode(t, err, connect.CodeFailedPrecondition, "nothing_to_refund")

	// A retry of a refund returns it without refunding again; the same id
	// with another amount is a conflict.
	again, err := e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, RefundId: "full-1"}))
	if err != nil || again.Msg.GetStatus() != bcp.AdjustmentCompleted || again.Msg.GetAmount() != 10282 {
		t.Fatalf("retry: %v %+v", err, again.Msg)
	}
	_, err = e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, RefundId: "full-1", Amount: 5}))
	wantCode(t, err, connect.CodeAlreadyExists, "refund_id_conflict")
	if n := len(e.payments.refunds()); n != 2 {
		t.Fatalf("payments asked %d times, want 2", n)
	}
	if n := e.superCount(`SELECT refunded FROM orders.orders WHERE id = $1`, id); n != 12282 {
		t.Fatalf("refunded %d", n)
	}
	if got := e.get(ctx, id); len(got.Adjustments) != 2 || got.Adjustments[1].Status != bcp.AdjustmentCompleted {
		t.Fatalf("stored adjustments %+v", got.Adjustments)
	}
}

func TestRefundFailureIsAFailedAdjustment(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	id := e.create(ctx, "chk_1", "").GetOrderId()

	// The payments service reports the refund failed.
	e.payments.set(func(m *paymentsv1.RefundPaymentRequest) (*paymentsv1.Refund, error) {
		return &paymentsv1.Refund{Id: m.GetRefundId(), Amount: m.GetAmount(), Status: "failed", FailureMessage: "saldo insuficiente no PSP"}, nil
	})
	r, err := e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, Amount: 12282}))
	if err != nil {
		t.Fatal(err)
	}
	validateOrder(t, r.Msg.GetOrderJson())
	o := decode(t, r.Msg.GetOrderJson())
	if r.Msg.GetStatus() != bcp.AdjustmentFailed || r.Msg.GetFailureMessage() != "saldo insuficiente no PSP" || len(o.Adjustments) != 1 || o.Adjustments[0].Status != bcp.AdjustmentFailed {
		t.Fatalf("failed refund: %+v", r.Msg)
	}

	// The payments service refuses the request outright.
	e.payments.set(func(*paymentsv1.RefundPaymentRequest) (*paymentsv1.Refund, error) {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("the attempt was not paid"))
	})
	r, err = e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, Amount: 100}))
	if err != nil || r.Msg.GetStatus() != bcp.AdjustmentFailed || r.Msg.GetFailureMessage() != "the attempt was not paid" {
		t.Fatalf("refused refund: %v %+v", err, r.Msg)
	}

	// Unreachable: the outcome is unknown, so the refund stays pending
	// (its amount reserved) and a retry with the same id settles it.
	e.payments.set(func(*paymentsv1.RefundPaymentRequest) (*paymentsv1.Refund, error) {
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("psp down"))
	})
	r, err = e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, Amount: 12000, RefundId: "r-unknown"}))
	if err != nil || r.Msg.GetStatus() != bcp.AdjustmentPending {
		t.Fatalf("unknown outcome: %v %+v", err, r.Msg)
	}
	_, err = e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, Amount: 283}))
	wantCode(t, err, connect.CodeInvalidArgument, "refund_exceeds_remaining")
	e.payments.set(nil)
	r, err = e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, RefundId: "r-unknown"}))
	if err != nil || r.Msg.GetStatus() != bcp.AdjustmentCompleted || r.Msg.GetAmount() != 12000 {
		t.Fatalf("settled on retry: %v %+v", err, r.Msg)
	}
	validateOrder(t, r.Msg.GetOrderJson())
	o = decode(t, r.Msg.GetOrderJson())
	want := []string{bcp.AdjustmentFailed, bcp.AdjustmentFailed, bcp.AdjustmentCompleted}
	for i, a := range o.Adjustments {
		if a.Status != want[i] {
			t.Fatalf("adjustment %d: %s, want %s", i, a.Status, want[i])
		}
	}
	for _, c := range e.payments.refunds() {
		if c.GetRefundId() == "" {
			t.Fatal("a refund reached payments without its id")
		}
	}
}

// Concurrent refunds can never add up to more than was paid.
func TestConcurrentRefundsNeverExceedThePayment(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_PRODUCTION)
	id := e.create(ctx, "chk_1", "").GetOrderId() // 12282
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, Amount: 4000}))
			if err == nil && r.Msg.GetStatus() == bcp.AdjustmentCompleted {
				mu.Lock()
				ok++
				mu.Unlock()
			} else if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Errorf("refund: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 3 {
		t.Fatalf("%d refunds of 4000 out of 12282 succeeded, want 3", ok)
	}
	if n := e.superCount(`SELECT refunded FROM orders.orders WHERE id = $1`, id); n != 12000 {
		t.Fatalf("refunded %d", n)
	}
}

// A refund whose outcome was unknown is settled by its durable job, with
// the same refund id, and the agent is told.
func TestPendingRefundSettledByItsJob(t *testing.T) {
	e := start(t)
	ctx, _ := e.tenant("Loja A", tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT)
	rc := newReceiver(t, 0)
	id := e.create(ctx, "chk_1", rc.url()).GetOrderId()
	e.payments.set(func(m *paymentsv1.RefundPaymentRequest) (*paymentsv1.Refund, error) {
		return &paymentsv1.Refund{Id: m.GetRefundId(), Amount: m.GetAmount(), Status: "pending"}, nil
	})
	r, err := e.client.RefundOrder(ctx, connect.NewRequest(&ordersv1.RefundOrderRequest{OrderId: id, Amount: 1000}))
	if err != nil || r.Msg.GetStatus() != bcp.AdjustmentPending {
		t.Fatalf("pending refund: %v %+v", err, r.Msg)
	}
	e.payments.set(nil) // the PSP finishes it
	eventually(t, waitFor, "the refund job settling the refund", func() bool {
		o := e.get(ctx, id)
		return len(o.Adjustments) == 1 && o.Adjustments[0].Status == bcp.AdjustmentCompleted
	})
	for _, c := range e.payments.refunds() {
		if c.GetRefundId() != r.Msg.GetRefundId() || c.GetAmount() != 1000 {
			t.Fatalf("payments asked %+v", c)
		}
	}
	// Created, refund pending, refund completed: three messages, the last
	// one showing the completed refund.
	eventually(t, waitFor, "three webhooks", func() bool { return len(rc.got()) == 3 })
	last := decode(t, rc.got()[2].body)
	if len(last.Adjustments) != 1 || last.Adjustments[0].Status != bcp.AdjustmentCompleted {
		t.Fatalf("last webhook: %s", rc.got()[2].body)
	}
}
