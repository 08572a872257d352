package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/orders/v1/ordersv1connect"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/web/admin"
)

// tenantUsage prints what the operator console shows for a tenant: agent
// requests and errors (tenants), checkouts (checkout) and orders and GMV
// (orders) over the last --days days.
func (c *cli) tenantUsage(ctx context.Context, args []string, server string, opts connect.ClientOption) error {
	fs := newFS("tenant usage")
	days := fs.Int("days", 30, "")
	p, err := parse(fs, args, 1, "<tenant>")
	if err != nil {
		return err
	}
	if *days < 1 || *days > 366 {
		return usageError{"--days must be between 1 and 366"}
	}
	tr, err := c.client.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: p[0]}))
	if err != nil {
		return err
	}
	t := tr.Msg.GetTenant()
	until := time.Now().Truncate(time.Second).Add(time.Second)
	since := until.AddDate(0, 0, -*days)
	u, err := c.client.GetUsage(ctx, connect.NewRequest(&tenantsv1.GetUsageRequest{Tenant: t.GetId(), SinceUnix: since.Unix(), UntilUnix: until.Unix()}))
	if err != nil {
		return err
	}
	id, err := uuid.Parse(t.GetId())
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	server = strings.TrimRight(server, "/")
	tctx := tenancy.With(ctx, id)
	cs, err := checkoutv1connect.NewCheckoutServiceClient(hc, server, opts).GetCheckoutStats(tctx,
		connect.NewRequest(&checkoutv1.GetCheckoutStatsRequest{SinceUnix: since.Unix(), UntilUnix: until.Unix()}))
	if err != nil {
		return err
	}
	ost, err := ordersv1connect.NewOrdersServiceClient(hc, server, opts).GetOrderStats(tctx,
		connect.NewRequest(&ordersv1.GetOrderStatsRequest{SinceUnix: since.Unix(), UntilUnix: until.Unix()}))
	if err != nil {
		return err
	}
	byStatus := map[string]int64{}
	var parts []string
	for _, s := range cs.Msg.GetByStatus() {
		byStatus[s.GetStatus()] = s.GetCount()
		parts = append(parts, s.GetStatus()+" "+strconv.FormatInt(s.GetCount(), 10))
	}
	if c.json {
		return c.printJSON(map[string]any{
			"tenant_id": t.GetId(), "slug": t.GetSlug(), "since_unix": since.Unix(), "until_unix": until.Unix(),
			"checkouts": cs.Msg.GetTotal(), "checkouts_by_status": byStatus, "orders": ost.Msg.GetOrders(), "gmv_minor": ost.Msg.GetGmvMinor(),
			"requests": u.Msg.GetRequests(), "errors": u.Msg.GetErrors(), "days": u.Msg.GetDays(),
		})
	}
	rate := "-"
	if n := u.Msg.GetRequests(); n > 0 {
		rate = strconv.FormatFloat(float64(u.Msg.GetErrors())*100/float64(n), 'f', 1, 64) + "%"
	}
	statuses := ""
	if len(parts) > 0 {
		statuses = " (" + strings.Join(parts, ", ") + ")"
	}
	fmt.Fprintf(c.out, "tenant %s (%s), last %d days (%s to %s UTC)\n  checkouts    %d%s\n  orders       %d\n  GMV          %s\n  requests     %d\n  errors       %d\n  error rate   %s\n",
		t.GetName(), t.GetSlug(), *days, since.UTC().Format("2006-01-02 15:04"), until.UTC().Format("2006-01-02 15:04"),
		cs.Msg.GetTotal(), statuses, ost.Msg.GetOrders(), admin.FormatBRL(ost.Msg.GetGmvMinor()), u.Msg.GetRequests(), u.Msg.GetErrors(), rate)
	return nil
}
