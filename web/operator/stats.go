package operator

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// stats are the checkout and order figures of the usage window.
type stats struct {
	Available bool
	Checkouts int64
	ByStatus  []statusCount
	Orders    int64
	GMV       int64 // centavos
}

type statusCount struct {
	Status string
	Count  int64
}

// stats reads the tenant's checkout and order figures from the checkout
// and orders services (operator token, the tenant in the request header).
// Either failing leaves the figures unavailable ("—"), not the page.
func (c *Console) stats(ctx context.Context, tenantID string, since, until time.Time) stats {
	id, err := uuid.Parse(tenantID)
	if err != nil || c.opts.Checkout == nil || c.opts.Orders == nil {
		return stats{}
	}
	ctx = tenancy.With(ctx, id)
	// The services' windows are [since, until) in whole seconds: round the
	// end up so what happened in the current second counts.
	until = until.Truncate(time.Second).Add(time.Second)
	cs, err := c.opts.Checkout.GetCheckoutStats(ctx, connect.NewRequest(&checkoutv1.GetCheckoutStatsRequest{SinceUnix: since.Unix(), UntilUnix: until.Unix()}))
	if err != nil {
		c.log.WarnContext(ctx, "operator console: checkout stats unavailable", "tenant_id", tenantID, "err", err)
		return stats{}
	}
	os, err := c.opts.Orders.GetOrderStats(ctx, connect.NewRequest(&ordersv1.GetOrderStatsRequest{SinceUnix: since.Unix(), UntilUnix: until.Unix()}))
	if err != nil {
		c.log.WarnContext(ctx, "operator console: order stats unavailable", "tenant_id", tenantID, "err", err)
		return stats{}
	}
	s := stats{Available: true, Checkouts: cs.Msg.GetTotal(), Orders: os.Msg.GetOrders(), GMV: os.Msg.GetGmvMinor()}
	for _, b := range cs.Msg.GetByStatus() {
		s.ByStatus = append(s.ByStatus, statusCount{Status: checkoutStatusPT(b.GetStatus()), Count: b.GetCount()})
	}
	return s
}

func checkoutStatusPT(s string) string {
	if t, ok := map[string]string{
		bcp.StatusIncomplete: "incompletos", bcp.StatusRequiresEscalation: "requerem comprador", bcp.StatusReadyForComplete: "prontos para concluir",
		bcp.StatusCompleteInProgress: "concluindo", bcp.StatusCompleted: "concluídos", bcp.StatusCanceled: "cancelados",
	}[s]; ok {
		return t
	}
	return s
}
