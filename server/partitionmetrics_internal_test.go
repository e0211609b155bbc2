package server

import (
	"log/slog"
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
