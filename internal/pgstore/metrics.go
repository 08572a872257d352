package pgstore

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// PoolCollector exports the pool's statistics (pgxpool.Stat) at each
// scrape: how many connections are in use against the maximum (the pool's
// saturation), and how often and how long an acquire waited because none
// was free.
func PoolCollector(pool *pgxpool.Pool) prometheus.Collector { return poolCollector{pool} }

type poolCollector struct{ pool *pgxpool.Pool }

var (
	poolMax = prometheus.NewDesc("bcp_db_pool_max_connections",
		"The database pool's maximum number of connections (pool_max_conns).", nil, nil)
	poolConns = prometheus.NewDesc("bcp_db_pool_connections",
		"The database pool's connections by state: acquired (in use), idle, constructing.", []string{"state"}, nil)
	poolAcquires = prometheus.NewDesc("bcp_db_pool_acquires_total",
		"Connections acquired from the database pool.", nil, nil)
	poolEmptyAcquires = prometheus.NewDesc("bcp_db_pool_empty_acquires_total",
		"Acquires that found no free connection and waited for one (or for a new one).", nil, nil)
	poolEmptyWait = prometheus.NewDesc("bcp_db_pool_empty_acquire_wait_seconds_total",
		"Time acquires spent waiting because the pool had no free connection.", nil, nil)
	poolCanceled = prometheus.NewDesc("bcp_db_pool_canceled_acquires_total",
		"Acquires canceled (their request's deadline or cancellation) before a connection was free.", nil, nil)
)

func (poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolMax, poolConns, poolAcquires, poolEmptyAcquires, poolEmptyWait, poolCanceled} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	ch <- prometheus.MustNewConstMetric(poolMax, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(s.AcquiredConns()), "acquired")
	ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(s.IdleConns()), "idle")
	ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(s.ConstructingConns()), "constructing")
	ch <- prometheus.MustNewConstMetric(poolAcquires, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolEmptyAcquires, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolEmptyWait, prometheus.CounterValue, s.EmptyAcquireWaitTime().Seconds())
	ch <- prometheus.MustNewConstMetric(poolCanceled, prometheus.CounterValue, float64(s.CanceledAcquireCount()))
}
