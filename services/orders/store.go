package orders

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	segjson "github.com/segmentio/encoding/json"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/jobs"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/orders/ordersdb"
)

// Order-level status kept for listing (derived from the lines).
const (
	statusProcessing = "processing"
	statusPartial    = "partial"
	statusFulfilled  = "fulfilled"
	statusCanceled   = "canceled"
)

// orderStatus summarises the lines: canceled when every line was removed,
// fulfilled when every remaining unit was, partial when some were.
func orderStatus(o *bcp.Order) string {
	active, done, some := 0, 0, false
	for _, l := range o.LineItems {
		if l.Quantity.Total == 0 {
			continue
		}
		active++
		if l.Quantity.Fulfilled >= l.Quantity.Total {
			done++
		}
		if l.Quantity.Fulfilled > 0 {
			some = true
		}
	}
	switch {
	case active == 0:
		return statusCanceled
	case done == active:
		return statusFulfilled
	case some:
		return statusPartial
	default:
		return statusProcessing
	}
}

// errNoChange tells mutate that fn found nothing to change (an idempotent
// replay): the transaction commits whatever fn wrote, but the snapshot is
// not rewritten and no webhook is sent.
var errNoChange = errors.New("orders: no change")

// mutate is the one way an order changes: it locks the order row, hands
// fn the row and the decoded snapshot, then stores the snapshot fn left,
// bumps the version and queues a webhook message, all in one transaction.
// fn may write its own rows with q. It returns the order as stored.
func (s *Service) mutate(ctx context.Context, id string, fn func(tx pgx.Tx, q *ordersdb.Queries, row *ordersdb.OrdersOrder, o *bcp.Order) error) (*bcp.Order, error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	var out *bcp.Order
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := ordersdb.New(tx)
		row, err := q.LockOrder(ctx, ordersdb.LockOrderParams{TenantID: tid, ID: id})
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return err
		}
		o, err := decodeOrder(row.Snapshot)
		if err != nil {
			return err
		}
		switch err := fn(tx, q, &row, o); {
		case errors.Is(err, errNoChange):
			out = o
			return nil
		case err != nil:
			return err
		}
		snap, err := json.Marshal(o)
		if err != nil {
			return err
		}
		version, err := q.UpdateOrder(ctx, ordersdb.UpdateOrderParams{
			TenantID: tid, ID: id, Status: orderStatus(o), Snapshot: snap, Refunded: row.Refunded,
		})
		if err != nil {
			return err
		}
		if err := s.queueWebhook(ctx, tx, q, tid, &row, version); err != nil {
			return err
		}
		out = o
		return nil
	})
	return out, err
}

// queueWebhook records a webhook message for the order's current version
// and inserts its delivery job in the caller's transaction. Orders whose
// agent gave no webhook URL get none.
func (s *Service) queueWebhook(ctx context.Context, tx pgx.Tx, q *ordersdb.Queries, tid uuid.UUID, row *ordersdb.OrdersOrder, version int32) error {
	if row.WebhookUrl == "" {
		return nil
	}
	if s.jobs == nil {
		return apperr.New(apperr.KindInternal, "internal", "orders: no job client to deliver webhooks")
	}
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	if err := q.InsertDelivery(ctx, ordersdb.InsertDeliveryParams{TenantID: tid, ID: id, OrderID: row.ID, OrderVersion: version}); err != nil {
		return err
	}
	_, err = jobs.InsertTx(ctx, s.jobs, tx, WebhookArgs{TenantID: tid, OrderID: row.ID, DeliveryID: id}, &river.InsertOpts{MaxAttempts: WebhookMaxAttempts})
	return err
}

// load reads an order in the tenant's scope. Another tenant's id is simply
// not found (the tenant filter and RLS).
func (s *Service) load(ctx context.Context, id string) (ordersdb.OrdersOrder, error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return ordersdb.OrdersOrder{}, err
	}
	var row ordersdb.OrdersOrder
	// One statement: one round trip (get_order).
	err = pgstore.Single(ctx, s.pool, func(q *pgstore.SingleQuerier) error {
		row, err = ordersdb.New(q).GetOrder(ctx, ordersdb.GetOrderParams{TenantID: tid, ID: id})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return row, notFound(id)
	}
	return row, err
}

func notFound(id string) error {
	return apperr.NotFound(bcp.CodeNotFound, "no order %q", id)
}

func decodeOrder(raw []byte) (*bcp.Order, error) {
	o := &bcp.Order{}
	if err := segjson.Unmarshal(raw, o); err != nil {
		return nil, err
	}
	return o, nil
}

// render is the order JSON every API answer carries. It re-encodes the
// snapshot through bcp.Order: jsonb keeps neither key order nor spacing,
// and callers (50 racing CreateOrder calls, say) must get identical bytes
// for the same order.
func render(o *bcp.Order) ([]byte, error) {
	c := *o
	c.UCP = nil
	return json.Marshal(&c)
}

func renderRaw(raw []byte) ([]byte, error) {
	o, err := decodeOrder(raw)
	if err != nil {
		return nil, err
	}
	return render(o)
}
