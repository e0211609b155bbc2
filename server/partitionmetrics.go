package server

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
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
	// By value of the STATIC and DYNAMIC dimensions of datasets with
	// dimensions: how many values are behind, and the missing and late
	// chunks of the most behind (valueGauges of them a dimension).
	behind, missingBy, lateBy *prometheus.Desc

	mu     sync.Mutex
	at     time.Time // when counts were computed (zero: never)
	counts []backends.PartitionCount
	values []valueGauge
}

// valueGauges bounds the values of one dimension whose counts /metrics
// shows: the label set stays bounded however many customers there are
// (`chunklock status --by` lists them all).
const valueGauges = 10

// valueGauge is one dimension's figures for /metrics.
type valueGauge struct {
	dataset, dimension string
	behind             int
	top                []backends.ValueCount
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
		behind: prometheus.NewDesc("chunklock_values_behind",
			"Values of a STATIC or DYNAMIC dimension with missing or late chunks, per dataset with dimensions and dimension (recounted at most every 30 s).",
			[]string{"dataset", "dimension"}, nil),
		missingBy: prometheus.NewDesc("chunklock_missing_chunks_by_value",
			"Missing chunks of one value of a STATIC or DYNAMIC dimension: the 10 values of each dimension with the most missing and late chunks (recounted at most every 30 s).",
			[]string{"dataset", "dimension", "value"}, nil),
		lateBy: prometheus.NewDesc("chunklock_late_chunks_by_value",
			"Late chunks of one value of a STATIC or DYNAMIC dimension: the same values as chunklock_missing_chunks_by_value.",
			[]string{"dataset", "dimension", "value"}, nil),
	}
}

func (g *partitionGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.missing
	ch <- g.late
	ch <- g.behind
	ch <- g.missingBy
	ch <- g.lateBy
}

func (g *partitionGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.at.IsZero() || time.Since(g.at) >= g.refresh {
		ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
		counts, values, err := g.count(ctx)
		cancel()
		if err != nil {
			g.log.Warn("counting missing and late chunks for /metrics", "err", err)
		} else {
			g.counts, g.values, g.at = counts, values, time.Now()
		}
	}
	for _, c := range g.counts {
		ch <- prometheus.MustNewConstMetric(g.missing, prometheus.GaugeValue, float64(c.Missing), c.Dataset)
		ch <- prometheus.MustNewConstMetric(g.late, prometheus.GaugeValue, float64(c.Late), c.Dataset)
	}
	for _, v := range g.values {
		ch <- prometheus.MustNewConstMetric(g.behind, prometheus.GaugeValue, float64(v.behind), v.dataset, v.dimension)
		for _, c := range v.top {
			ch <- prometheus.MustNewConstMetric(g.missingBy, prometheus.GaugeValue, float64(c.Missing), v.dataset, v.dimension, c.Value)
			ch <- prometheus.MustNewConstMetric(g.lateBy, prometheus.GaugeValue, float64(c.Late), v.dataset, v.dimension, c.Value)
		}
	}
}

// countValues counts the values behind of each STATIC or DYNAMIC
// dimension of d from the counts kept by value (no dataid read): none for
// a dimension whose counts by value are not kept (the rows would be read).
func (g *partitionGauges) countValues(ctx context.Context, d backends.Dataset) ([]valueGauge, error) {
	var out []valueGauge
	for _, dim := range d.Partitions.Dimensions {
		if dim.Kind != partition.Static && dim.Kind != partition.Dynamic {
			continue
		}
		v := valueGauge{dataset: d.ID, dimension: dim.Name}
		f := backends.ValueCountFilter{Dataset: d.ID, Dimension: dim.Name, Behind: true, WithoutOldest: true, First: backends.MaxValueCountPage}
		for {
			page, err := g.store.ValueCounts(ctx, f)
			if code := backends.CodeOf(err); err != nil && (code == backends.CodeInvalidArgument || code == backends.CodeNotFound) {
				break
			}
			if err != nil {
				return nil, err
			}
			if page.Behind < 0 {
				break // not kept by value: not counted here
			}
			v.behind = page.Behind
			v.top = append(v.top, page.Counts...)
			slices.SortStableFunc(v.top, func(a, b backends.ValueCount) int { return (b.Missing + b.Late) - (a.Missing + a.Late) })
			v.top = v.top[:min(len(v.top), valueGauges)]
			if !page.HasNextPage || len(page.Counts) == 0 {
				out = append(out, v)
				break
			}
			f.After = page.Counts[len(page.Counts)-1].Value
		}
	}
	return out, nil
}

// count counts every dataset with a partition definition, and by value
// every one with dimensions.
func (g *partitionGauges) count(ctx context.Context) ([]backends.PartitionCount, []valueGauge, error) {
	ds, err := g.store.Datasets(ctx)
	if err != nil {
		return nil, nil, err
	}
	var out []backends.PartitionCount
	var values []valueGauge
	for _, d := range ds {
		if d.Partitions == nil {
			continue
		}
		c, err := g.summaries.Count(ctx, d.ID, *d.Partitions)
		if code := backends.CodeOf(err); err != nil && (code == backends.CodeInvalidArgument || code == backends.CodeNotFound) {
			continue // its definition went away, or it did, since Datasets
		}
		if err != nil {
			return nil, nil, err
		}
		out = append(out, c)
		if d.Partitions.Kind == partition.Dimensional {
			v, err := g.countValues(ctx, d)
			if err != nil {
				return nil, nil, err
			}
			values = append(values, v...)
		}
	}
	return out, values, nil
}
