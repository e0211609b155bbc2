package server

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/resolvers"
)

// TestPartitionGauges: the gauges count missing and late chunks per dataset
// with a definition, none for a dataset without, and are recounted only
// once the refresh interval has passed.
func TestPartitionGauges(t *testing.T) {
	clock := backends.NewFakeClock(time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC))
	store := teststores.Memory(clock)
	ctx := t.Context()
	deadline := 6 * time.Hour
	_, err := store.UpsertDataset(ctx, backends.Dataset{ID: "feed", Location: "/x/{dataid}",
		Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01", Deadline: &deadline}})
	require.NoError(t, err)
	_, err = store.UpsertDataset(ctx, backends.Dataset{ID: "seq", Location: "/x/{dataid}", Partitions: &partition.Def{Kind: partition.Integer}})
	require.NoError(t, err)
	_, err = store.UpsertDataset(ctx, backends.Dataset{ID: "plain", Location: "/x/{dataid}"})
	require.NoError(t, err)
	for _, c := range [][2]string{{"feed", "2026-01-02"}, {"seq", "3"}, {"plain", "1"}} {
		_, err := store.Publish(ctx, c[0], c[1])
		require.NoError(t, err)
	}
	g := newPartitionGauges(store, resolvers.NewSummaries(store, time.Nanosecond, nil), slog.New(slog.DiscardHandler))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(g)
	gauges := func() map[string]float64 {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		out := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				require.Len(t, m.GetLabel(), 1)
				out[mf.GetName()+"/"+m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
		return out
	}
	// At 01-05 12:00 01..04 are due, and past their deadline (06:00 the
	// next day): 01, 03 and 04 are missing and late. seq: 0, 1 and 2 are
	// missing below the highest seen.
	want := map[string]float64{
		"chunklock_missing_chunks/feed": 3, "chunklock_late_chunks/feed": 3,
		"chunklock_missing_chunks/seq": 3, "chunklock_late_chunks/seq": 0,
	}
	require.Equal(t, want, gauges())

	_, err = store.Publish(ctx, "feed", "2026-01-01")
	require.NoError(t, err)
	require.Equal(t, want, gauges(), "recounted at most once per refresh interval")
	g.refresh = 0
	want["chunklock_missing_chunks/feed"], want["chunklock_late_chunks/feed"] = 2, 2
	require.Equal(t, want, gauges())
}

// TestValueGauges: a dataset with a DYNAMIC dimension gets how many of its
// values are behind, and the missing and late chunks of the most behind
// ones, at most valueGauges of them, labelled by value.
func TestValueGauges(t *testing.T) {
	clock := backends.NewFakeClock(time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC))
	store := teststores.Memory(clock)
	ctx := t.Context()
	deadline := 6 * time.Hour
	def := partition.Def{Kind: partition.Dimensional, Deadline: &deadline, Dimensions: []partition.Dimension{
		{Name: "date", Def: partition.Def{Kind: partition.Daily, Start: "2026-01-01"}},
		{Name: "customer", Def: partition.Def{Kind: partition.Dynamic}},
	}}
	_, err := store.UpsertDataset(ctx, backends.Dataset{ID: "orders", Location: "/x/{dataid}", Partitions: &def})
	require.NoError(t, err)
	customers := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	_, err = store.AddPartitions(ctx, "orders", customers, "customer", "2026-01-01")
	require.NoError(t, err)
	for _, c := range customers[1:] {
		// Every customer but a has 01-01 READY.
		_, err := store.Publish(ctx, "orders", "2026-01-01|"+c)
		require.NoError(t, err)
	}
	g := newPartitionGauges(store, resolvers.NewSummaries(store, time.Nanosecond, nil), slog.New(slog.DiscardHandler))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(g)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	values := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetValue())
			}
			got[mf.GetName()+"/"+strings.Join(labels, "/")] = m.GetGauge().GetValue()
			if mf.GetName() == "chunklock_missing_chunks_by_value" {
				values++
			}
		}
	}
	require.Equal(t, float64(12), got["chunklock_values_behind/orders/customer"])
	require.Equal(t, float64(4), got["chunklock_missing_chunks_by_value/orders/customer/a"], "a: 01 to 04, the most behind")
	require.Equal(t, float64(4), got["chunklock_late_chunks_by_value/orders/customer/a"])
	require.Equal(t, valueGauges, values, "the label set is bounded")
}
