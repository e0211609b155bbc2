package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/resolvers"
)

// partitionGauges serves chunklock_missing_chunks and chunklock_late_chunks
// per dataset with a partition definition. A scrape recounts at most once
// per refresh interval (the counts it answers are at most that old); a
// count is the store's kept counts and a short read of rows for a time
// definition, else a read of the dataset's OUTPUT rows over at most
// backends.MaxPartitionCount expected dataids (see PartitionCounts).
// The counts are those partitionSummary answers (resolvers.Summaries).
type partitionGauges struct {
	store     backends.Store
	summaries *resolvers.Summaries
	log       *slog.Logger
	refresh   time.Duration
	timeout   time.Duration
	missing   *prometheus.Desc
	late      *prometheus.Desc

	mu     sync.Mutex
	at     time.Time // when counts were computed (zero: never)
	counts []backends.PartitionCount
}

// partitionRefresh is how often the gauges are recounted at most.
const partitionRefresh = 30 * time.Second

func newPartitionGauges(store backends.Store, summaries *resolvers.Summaries, log *slog.Logger) *partitionGauges {
	return &partitionGauges{
		store: store, summaries: summaries, log: log, refresh: partitionRefresh, timeout: 10 * time.Second,
		missing: prometheus.NewDesc("chunklock_missing_chunks",
			"Due expected dataids with no OUTPUT row, per dataset with a partition definition (recounted at most every 30 s).",
			[]string{"dataset"}, nil),
		late: prometheus.NewDesc("chunklock_late_chunks",
			"Expected dataids not READY at or past their window's end + deadline, per dataset with a partition definition (recounted at most every 30 s).",
			[]string{"dataset"}, nil),
	}
}

func (g *partitionGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.missing
	ch <- g.late
}

func (g *partitionGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.at.IsZero() || time.Since(g.at) >= g.refresh {
		ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
		counts, err := g.count(ctx)
		cancel()
		if err != nil {
			g.log.Warn("counting missing and late chunks for /metrics", "err", err)
		} else {
			g.counts, g.at = counts, time.Now()
		}
	}
	for _, c := range g.counts {
		ch <- prometheus.MustNewConstMetric(g.missing, prometheus.GaugeValue, float64(c.Missing), c.Dataset)
		ch <- prometheus.MustNewConstMetric(g.late, prometheus.GaugeValue, float64(c.Late), c.Dataset)
	}
}

// count counts every dataset with a partition definition.
func (g *partitionGauges) count(ctx context.Context) ([]backends.PartitionCount, error) {
	ds, err := g.store.Datasets(ctx)
	if err != nil {
		return nil, err
	}
	var out []backends.PartitionCount
	for _, d := range ds {
		if d.Partitions == nil {
			continue
		}
		c, err := g.summaries.Count(ctx, d.ID, *d.Partitions)
		if code := backends.CodeOf(err); err != nil && (code == backends.CodeInvalidArgument || code == backends.CodeNotFound) {
			continue // its definition went away, or it did, since Datasets
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
