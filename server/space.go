package server

import (
	"github.com/prometheus/client_golang/prometheus"
)

// StoreSpace is a store's size against its quota: the embedded etcd's
// database file against its --etcd-quota-backend-bytes (embedded.Space).
type StoreSpace struct {
	// Size is what the quota counts; InUse the part of it in use (the
	// rest a defragmentation gives back).
	Size, InUse, Quota int64
	// NoSpace: the store refuses every write.
	NoSpace bool
}

// spaceCollector serves StoreSpace as gauges, read at each scrape.
type spaceCollector struct {
	space                       func() StoreSpace
	size, inUse, quota, noSpace *prometheus.Desc
}

func newSpaceCollector(space func() StoreSpace) *spaceCollector {
	return &spaceCollector{
		space: space,
		size: prometheus.NewDesc("chunklock_store_size_bytes",
			"Size of the embedded store's database, which its quota counts (--etcd-quota-backend-bytes); past the quota every write is refused.", nil, nil),
		inUse: prometheus.NewDesc("chunklock_store_in_use_bytes",
			"Part of the embedded store's database in use; the rest is given back by the next defragmentation.", nil, nil),
		quota: prometheus.NewDesc("chunklock_store_quota_bytes",
			"The embedded store's quota (--etcd-quota-backend-bytes).", nil, nil),
		noSpace: prometheus.NewDesc("chunklock_store_nospace",
			"1 while the embedded store is out of space (etcd's NOSPACE alarm) and refuses every write, else 0.", nil, nil),
	}
}

func (c *spaceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.size
	ch <- c.inUse
	ch <- c.quota
	ch <- c.noSpace
}

func (c *spaceCollector) Collect(ch chan<- prometheus.Metric) {
	sp := c.space()
	no := 0.0
	if sp.NoSpace {
		no = 1
	}
	ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(sp.Size))
	ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(sp.InUse))
	ch <- prometheus.MustNewConstMetric(c.quota, prometheus.GaugeValue, float64(sp.Quota))
	ch <- prometheus.MustNewConstMetric(c.noSpace, prometheus.GaugeValue, no)
}
