package orders

import (
	"context"
	"encoding/base64"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/orders/ordersdb"
)

// GetOrder returns the order's current snapshot and the agent that created
// it (the edge shows an order only to that agent).
func (s *Service) GetOrder(ctx context.Context, r *connect.Request[ordersv1.GetOrderRequest]) (*connect.Response[ordersv1.GetOrderResponse], error) {
	row, err := s.load(ctx, r.Msg.GetId())
	if err != nil {
		return nil, err
	}
	if a := r.Msg.GetAgentProfileUrl(); a != "" && a != row.AgentProfileUrl {
		// Another agent's order: it learns nothing, not even that it exists.
		return nil, apperr.NotFound(bcp.CodeNotFound, "no order %q", r.Msg.GetId())
	}
	b, err := renderRaw(row.Snapshot)
	if err != nil {
		return nil, err
	}
	out := &ordersv1.GetOrderResponse{OrderJson: b, AgentProfileUrl: row.AgentProfileUrl}
	if r.Msg.GetAgentProfileUrl() == "" {
		out.Ap2MandateJson = row.Ap2Mandate // the merchant's record, never sent to agents
		out.Details = decodeDetails(row.Details)
	}
	return connect.NewResponse(out), nil
}

// ListOrders pages through the tenant's orders, newest first.
func (s *Service) ListOrders(ctx context.Context, r *connect.Request[ordersv1.ListOrdersRequest]) (*connect.Response[ordersv1.ListOrdersResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	size := r.Msg.GetPageSize()
	if size <= 0 || size > 500 {
		size = 50
	}
	var before *string
	if tok := r.Msg.GetPageToken(); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return nil, apperr.Invalid("page_token", "invalid_page_token", "malformed page token")
		}
		v := string(b)
		before = &v
	}
	params, err := listFilters(r.Msg)
	if err != nil {
		return nil, err
	}
	params.TenantID, params.BeforeID, params.PageSize = tid, before, size
	out := &ordersv1.ListOrdersResponse{}
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := ordersdb.New(tx).ListOrders(ctx, params)
		for _, row := range rows {
			out.Orders = append(out.Orders, &ordersv1.OrderSummary{
				Id: row.ID, CheckoutId: row.CheckoutID, Total: row.Total, Currency: row.Currency,
				AgentProfileUrl: row.AgentProfileUrl, Status: row.Status, CreateTimeUnix: row.CreatedAt.Unix(), Ap2MandateJson: row.Ap2Mandate,
				Label: row.Label, BuyerName: row.BuyerName, BuyerEmail: row.BuyerEmail, PaymentMethod: row.PaymentMethod,
			})
		}
		if int32(len(rows)) == size {
			out.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(rows[len(rows)-1].ID))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

// ListWebhookDeliveries lists the order's webhook messages, oldest first.
func (s *Service) ListWebhookDeliveries(ctx context.Context, r *connect.Request[ordersv1.ListWebhookDeliveriesRequest]) (*connect.Response[ordersv1.ListWebhookDeliveriesResponse], error) {
	row, err := s.load(ctx, r.Msg.GetOrderId())
	if err != nil {
		return nil, err
	}
	out := &ordersv1.ListWebhookDeliveriesResponse{}
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		ds, err := ordersdb.New(tx).ListDeliveries(ctx, ordersdb.ListDeliveriesParams{TenantID: row.TenantID, OrderID: row.ID})
		for _, d := range ds {
			w := &ordersv1.WebhookDelivery{
				Id: d.ID.String(), OrderId: d.OrderID, OrderVersion: d.OrderVersion, Attempts: d.Attempts,
				LastError: d.LastError, CreateTimeUnix: d.CreatedAt.Unix(),
			}
			if d.LastStatus != nil {
				w.LastStatus = *d.LastStatus
			}
			if d.DeliveredAt != nil {
				w.DeliveredTimeUnix = d.DeliveredAt.Unix()
			}
			out.Deliveries = append(out.Deliveries, w)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

// listFilters checks ListOrders' filters. A query that is an order number
// ("#1007", "1007") matches that label; any query also matches part of
// the buyer's name or e-mail.
func listFilters(m *ordersv1.ListOrdersRequest) (ordersdb.ListOrdersParams, error) {
	p := ordersdb.ListOrdersParams{Status: m.GetStatus(), PaymentMethod: m.GetPaymentMethod()}
	switch p.Status {
	case "", "processing", "partial", "fulfilled", "canceled":
	default:
		return p, apperr.Invalid("status", "invalid_status", "status must be processing, partial, fulfilled or canceled")
	}
	switch p.PaymentMethod {
	case "", "pix", "card":
	default:
		return p, apperr.Invalid("payment_method", "invalid_payment_method", "payment_method must be pix or card")
	}
	if s, u := m.GetSinceUnix(), m.GetUntilUnix(); s < 0 || u < 0 || (s > 0 && u > 0 && u <= s) {
		return p, apperr.Invalid("until_unix", "invalid_range", "the creation time range must be non-negative and until after since")
	}
	if s := m.GetSinceUnix(); s > 0 {
		t := time.Unix(s, 0)
		p.Since = &t
	}
	if u := m.GetUntilUnix(); u > 0 {
		t := time.Unix(u, 0)
		p.Until = &t
	}
	q := strings.TrimSpace(m.GetQuery())
	if len(q) > 200 {
		return p, apperr.Invalid("query", "invalid_query", "query must be at most 200 characters")
	}
	if q == "" {
		return p, nil
	}
	if n := strings.TrimPrefix(q, "#"); n != "" && strings.Trim(n, "0123456789") == "" {
		p.Label = "#" + n
	}
	p.Pattern = "%" + likeEscaper.Replace(q) + "%"
	return p, nil
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)
