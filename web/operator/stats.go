package operator

import (
	"context"
	"time"
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

// stats reads the tenant's checkout and order figures.
// TODO(stats): GetCheckoutStats / GetOrderStats (branch stats) are not on
// this branch yet; until they are, the console shows "—".
func (c *Console) stats(ctx context.Context, tenantID string, since, until time.Time) stats {
	return stats{}
}
