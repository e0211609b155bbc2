package webhook_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/webhook"
)

// lateStore is a memory store at epoch with dataset feed of def.
func lateStore(t *testing.T, def partition.Def) (backends.Store, *backends.FakeClock) {
	clock := backends.NewFakeClock(epoch)
	s := teststores.Memory(clock)
	t.Cleanup(func() { _ = s.Close() })
	pipeline(t, s)
	_, err := s.UpsertDataset(context.Background(), backends.Dataset{ID: "feed", Partitions: &def})
	require.NoError(t, err)
	return s, clock
}

// markedSince tells whether feed's deadlines were checked at or after at
// (or, for a dispatcher that keeps no such time, whether any was).
func markedSince(t *testing.T, s backends.Store, url string, at time.Time) bool {
	rec := lateRecordOf(t, s, url)
	if m, ok := rec.Marks["feed"]; ok {
		return !m.At.Before(at)
	}
	_, ok := recordsOf(t, s, url).Late["feed"]
	return ok && at.IsZero()
}

// waitChecked waits until feed's deadlines were checked at or after at, or
// more than n alerts arrived.
func waitChecked(t *testing.T, s backends.Store, rcv *receiver, at time.Time, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return markedSince(t, s, rcv.URL, at) || len(rcv.all()) > n },
		60*time.Second, 5*time.Millisecond, "waiting for a check of deadlines")
}

// TestLateWatermarkHoldsWhenStartMovesBack: a dataset first seen before
// any of its deadlines passed, whose start then moves ten years back, does
// not alert the 3,652 chunks of those years (their deadlines passed before
// the dispatcher looked): only chunks whose deadline passes afterwards are
// late alerts.
func TestLateWatermarkHoldsWhenStartMovesBack(t *testing.T) {
	deadline := time.Hour
	def := partition.Def{Kind: partition.Daily, Start: "2026-03-01", Deadline: &deadline}
	s, clock := lateStore(t, def)
	rcv := newReceiver(t)
	start(t, fastConfig(s, clock, rcv.URL))
	waitChecked(t, s, rcv, time.Time{}, 0)

	def.Start = "2016-03-01"
	_, err := s.UpsertDataset(context.Background(), backends.Dataset{ID: "feed", Partitions: &def})
	require.NoError(t, err)
	clock.Advance(14 * time.Hour) // 2026-03-02 02:00: 2026-03-01 passed its deadline at 01:00
	got := rcv.waitAccepted(t, 1)
	waitChecked(t, s, rcv, clock.Now(), 1)
	require.Equal(t, 1, len(rcv.all()), "only the chunk whose deadline passed while watched")
	require.Equal(t, "late/feed/2026-03-01", got[0].ID)
}

// TestLateBacklogSummarized: chunks whose deadlines passed while no
// dispatcher ran are alerted when one starts, each on its own up to
// LateCap of them a check; more make one late_summary alert that counts
// them, instead of a storm.
func TestLateBacklogSummarized(t *testing.T) {
	zero := time.Duration(0)
	s, clock := lateStore(t, partition.Def{Kind: partition.Hourly, Start: "2026-03-01T00", Deadline: &zero})
	rcv := newReceiver(t)
	run := start(t, fastConfig(s, clock, rcv.URL))
	waitChecked(t, s, rcv, clock.Now(), 0) // hours 00-11 were late before: not alerts
	run.stop()

	clock.Advance(150 * time.Hour) // hours 2026-03-01T12 to 2026-03-07T17 pass their deadlines
	start(t, fastConfig(s, clock, rcv.URL))
	got := rcv.waitAccepted(t, 1)
	waitChecked(t, s, rcv, clock.Now(), 1)
	require.Equal(t, 1, len(rcv.all()), "one summary, not 150 alerts")
	a := got[0].Alert
	require.Equal(t, webhook.KindLateSummary, a.Kind)
	require.Equal(t, webhook.KindLateSummary, got[0].Kind)
	require.Equal(t, []any{"feed", "2026-03-01T12", "2026-03-07T17", 150}, []any{a.Dataset, a.DataID, a.LastDataID, a.Count})
	require.Equal(t, "150 chunks of feed are late: not READY 0s after their windows ended, 2026-03-01T12 to 2026-03-07T17", a.Reason)
	require.Equal(t, "late/feed/2026-03-01T12..2026-03-07T17", a.ID)
	require.Equal(t, time.Date(2026, 3, 7, 18, 0, 0, 0, time.UTC), a.Time, "when the last one's deadline passed")

	clock.Advance(2 * time.Hour) // within the cap: one alert each
	got = rcv.waitAccepted(t, 3)
	require.Equal(t, []string{"late/feed/2026-03-07T18", "late/feed/2026-03-07T19"}, []string{got[1].ID, got[2].ID})
	require.Equal(t, webhook.KindLate, got[1].Alert.Kind)
}

// TestLateStreamNeverHoldsBackTransitions: late alerts and transitions
// (fail, lease_expired, hold) are two streams, each in order: a late alert
// the webhook keeps refusing, retried, holds back no hold alert.
func TestLateStreamNeverHoldsBackTransitions(t *testing.T) {
	deadline := time.Hour
	s, clock := lateStore(t, partition.Def{Kind: partition.Daily, Start: "2026-03-01", Deadline: &deadline})
	rcv := newReceiver(t)
	rcv.refuse = webhook.KindLate
	start(t, fastConfig(s, clock, rcv.URL))
	waitChecked(t, s, rcv, time.Time{}, 0)
	clock.Advance(14 * time.Hour)
	require.Eventually(t, func() bool { return len(rcv.all()) >= 2 }, 60*time.Second, 5*time.Millisecond,
		"the late alert is refused and tried again")

	holds(t, s, 1, 5)
	require.Eventually(t, func() bool { return len(rcv.accepted()) == 5 }, 10*time.Second, 5*time.Millisecond,
		"the hold alerts arrive while the late one is refused: %v", ids(rcv.all()))
	for i, d := range rcv.accepted() {
		require.Equal(t, []string{webhook.KindHold, string(rune('1' + i))}, []string{d.Kind, d.Alert.DataID}, "in order")
	}
	rcv.mu.Lock()
	rcv.refuse = ""
	rcv.mu.Unlock()
	got := rcv.waitAccepted(t, 6)
	require.Equal(t, "late/feed/2026-03-01", got[5].ID)
}

// TestLegacyLateMarks: a record written by a version that kept the last
// dataid checked of each dataset in the webhook's one record goes on from
// there: chunks whose deadlines passed while no server ran are alerted.
func TestLegacyLateMarks(t *testing.T) {
	ctx := context.Background()
	deadline := time.Hour
	s, clock := lateStore(t, partition.Def{Kind: partition.Daily, Start: "2026-02-20", Deadline: &deadline})
	rcv := newReceiver(t)
	legacy, err := json.Marshal(map[string]any{"webhook": webhook.Redact(rcv.URL), "seq": 0,
		"late": map[string]string{"feed": "2026-02-26"}})
	require.NoError(t, err)
	_, ok, err := s.SwapRecord(ctx, webhook.RecordKey(rcv.URL), legacy, 0)
	require.NoError(t, err)
	require.True(t, ok)

	start(t, fastConfig(s, clock, rcv.URL))
	got := rcv.waitAccepted(t, 2)
	waitChecked(t, s, rcv, clock.Now(), 2)
	require.Len(t, rcv.all(), 2, "%v", ids(rcv.all()))
	require.Equal(t, []string{"late/feed/2026-02-27", "late/feed/2026-02-28"}, []string{got[0].ID, got[1].ID})
}

// TestLateTuples: a dataset with dimensions is watched as its time
// dimension is: each tuple not READY by its window's end + the deadline is
// a late alert; a customer added now is expected from today's window (it
// raises no alert for the days before), and one added with a backfill
// raises none for the days whose deadlines passed before it was added.
func TestLateTuples(t *testing.T) {
	deadline := time.Hour
	s, clock := lateStore(t, partition.Def{Kind: partition.Dimensional, Deadline: &deadline, Dimensions: []partition.Dimension{
		{Name: "date", Def: partition.Def{Kind: partition.Daily, Start: "2026-02-27"}},
		{Name: "customer", Def: partition.Def{Kind: partition.Dynamic}},
	}})
	ctx := context.Background()
	_, err := s.AddPartitions(ctx, "feed", []string{"acme"}, "customer", "")
	require.NoError(t, err)
	rcv := newReceiver(t)
	start(t, fastConfig(s, clock, rcv.URL))
	waitChecked(t, s, rcv, time.Time{}, 0)
	_, err = s.AddPartitions(ctx, "feed", []string{"bolt"}, "customer", "2026-02-27")
	require.NoError(t, err)
	_, err = s.Publish(ctx, "feed", "2026-03-01|bolt")
	require.NoError(t, err)
	clock.Advance(14 * time.Hour) // 2026-03-02 02:00: 2026-03-01 passed its deadline at 01:00
	got := rcv.waitAccepted(t, 1)
	waitChecked(t, s, rcv, clock.Now(), 1)
	require.Len(t, rcv.all(), 1)
	require.Equal(t, []string{"late/feed/2026-03-01|acme", webhook.KindLate, "2026-03-01|acme"}, []string{got[0].ID, got[0].Alert.Kind, got[0].Alert.DataID})

	clock.Advance(24 * time.Hour) // 2026-03-02 passes its deadline for both
	got = rcv.waitAccepted(t, 3)
	require.Equal(t, []string{"late/feed/2026-03-02|acme", "late/feed/2026-03-02|bolt"}, []string{got[1].ID, got[2].ID})
}
