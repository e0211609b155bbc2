package webhook_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/webhook"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestAlertKinds: each kind of alert reaches the webhook once, with its
// fields, its id in the header, and signatures that verify with the
// secret (and not with another), one of them timestamped just now.
func TestAlertKinds(t *testing.T) {
	ctx := context.Background()
	clock := backends.NewFakeClock(epoch)
	s := teststores.Memory(clock)
	t.Cleanup(func() { _ = s.Close() })
	pipeline(t, s)
	deadline := time.Hour
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "feed", Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-02-27", Deadline: &deadline}})
	require.NoError(t, err)
	// Events before the webhook's first start are not its alerts.
	holds(t, s, 100, 1)

	rcv := newReceiver(t)
	run := start(t, fastConfig(s, clock, rcv.URL))
	waitRecord(t, s, rcv.URL)

	transitions(t, s, clock)
	// feed/2026-02-28 and 2026-03-01 were late before the first check;
	// 2026-03-01 passes its deadline at 2026-03-02 01:00, while watched.
	got := rcv.waitAccepted(t, 4)
	require.Eventually(t, func() bool { _, ok := lateRecordOf(t, s, rcv.URL).Marks["feed"]; return ok },
		60*time.Second, 5*time.Millisecond, "waiting for the first check of deadlines")
	clock.Advance(14 * time.Hour)
	got = rcv.waitAccepted(t, 5)

	want := []struct{ kind, dataset, dataid, job, status, reason string }{
		{webhook.KindFail, "out", "1", "j", "FAILED", "boom"},
		{webhook.KindFail, "out", "1", "j", "HOLD", "boom again"},
		{webhook.KindHold, "out", "2", "j", "HOLD", "operator"},
		{webhook.KindLeaseExpired, "out", "3", "j", "FAILED", backends.ReasonLeaseExpired},
		{webhook.KindLate, "feed", "2026-03-01", "", "NONE", "not READY 1h0m0s after its window ended"},
	}
	require.Len(t, got, len(want), "%v", ids(got))
	for i, w := range want {
		d := got[i]
		a := d.Alert
		require.Equal(t, w.kind, a.Kind, "alert %d: %s", i, d.Body)
		require.Equal(t, w.kind, d.Kind)
		require.Equal(t, a.ID, d.ID)
		require.Equal(t, []string{w.dataset, w.dataid, w.job, w.status, w.reason}, []string{a.Dataset, a.DataID, a.Job, a.Status, a.Reason})
		requireSigned(t, d)
		require.False(t, a.Time.IsZero())
	}
	require.Equal(t, 1, got[0].Alert.Attempt)
	require.Equal(t, 2, got[1].Alert.Attempt)
	require.Equal(t, "exec-2", got[3].Alert.Executor)
	require.Equal(t, "reaper", got[3].Alert.Actor)
	require.Equal(t, "late/feed/2026-03-01", got[4].ID)
	require.Equal(t, time.Date(2026, 3, 2, 1, 0, 0, 0, time.UTC), got[4].Alert.Time)
	require.Less(t, got[0].Alert.Seq, got[1].Alert.Seq)

	// A late chunk is alerted once: more checks, and a restarted
	// dispatcher, send it again never.
	holds(t, s, 4, 1)
	rcv.waitAccepted(t, 6)
	run.stop()
	start(t, fastConfig(s, clock, rcv.URL))
	holds(t, s, 5, 1)
	got = rcv.waitAccepted(t, 7)
	require.Len(t, got, 7)
	require.Len(t, rcv.all(), 7)
	require.Equal(t, []string{"out/4", "out/5"}, []string{got[5].Alert.Dataset + "/" + got[5].Alert.DataID, got[6].Alert.Dataset + "/" + got[6].Alert.DataID})
}

// transitions makes one alert of each transition kind, in order: fail,
// fail into HOLD (attempts exhausted) of out/1, an operator's hold of
// out/2, and out/3's claim lost to lease expiry.
func transitions(t *testing.T, s backends.Store, clock *backends.FakeClock) {
	ctx := context.Background()
	for i, reason := range []string{"boom", "boom again"} {
		_, err := s.Publish(ctx, "src", "1")
		if i == 0 {
			require.NoError(t, err)
		}
		c, err := s.FindNext(ctx, "j", "exec-1")
		require.NoError(t, err)
		require.NotNil(t, c)
		require.NoError(t, s.Fail(ctx, c.Token, reason))
	}
	holds(t, s, 2, 1)
	_, err := s.Publish(ctx, "src", "3")
	require.NoError(t, err)
	_, err = s.Claim(ctx, "j", "3", "exec-2")
	require.NoError(t, err)
	clock.Advance(61 * time.Second)
	n, err := s.ExpireLeases(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// requireSigned: both signatures of a delivery verify with the secret and
// not with another, and the timestamped one was made just now.
func requireSigned(t *testing.T, d delivery) {
	t.Helper()
	require.True(t, webhook.Verify(secret, d.Body, d.Signature), "the signature verifies")
	require.False(t, webhook.Verify([]byte("another"), d.Body, d.Signature))
	require.NoError(t, webhook.Check(secret, d.Body, d.Timed, webhook.Tolerance(time.Minute)), "signed just now")
	require.False(t, webhook.Verify([]byte("another"), d.Body, d.Timed))
}

// TestRetryAfter500: a 500 is retried; the alert is delivered once
// accepted, with the same id and body, and the metrics count both tries.
func TestRetryAfter500(t *testing.T) {
	clock := backends.NewFakeClock(epoch)
	s := teststores.Memory(clock)
	t.Cleanup(func() { _ = s.Close() })
	pipeline(t, s)
	rcv := newReceiver(t)
	rcv.fail500 = 1
	run := start(t, fastConfig(s, clock, rcv.URL))
	waitRecord(t, s, rcv.URL)
	holds(t, s, 1, 1)
	rcv.waitAccepted(t, 1)
	all := rcv.all()
	require.Len(t, all, 2)
	require.False(t, all[0].Accepted)
	require.True(t, all[1].Accepted)
	require.Equal(t, all[0].ID, all[1].ID)
	require.Equal(t, all[0].Body, all[1].Body)
	for _, d := range all {
		requireSigned(t, d) // each attempt as it leaves
	}
	require.LessOrEqual(t, all[0].Timed[:len("t=1234567890")], all[1].Timed[:len("t=1234567890")])

	reg := prometheus.NewRegistry()
	reg.MustRegister(run.d)
	name := webhook.Redact(rcv.URL)
	want := map[string]float64{
		`chunklock_webhook_attempts_total{result="error",webhook="` + name + `"}`:      1,
		`chunklock_webhook_attempts_total{result="ok",webhook="` + name + `"}`:         1,
		`chunklock_webhook_alerts_delivered_total{kind="hold",webhook="` + name + `"}`: 1,
		`chunklock_webhook_delivering{webhook="` + name + `"}`:                         1,
		`chunklock_webhook_lag_seconds{webhook="` + name + `"}`:                        0,
	}
	// The dispatcher counts a delivery once the answer is back, a moment
	// after the receiver has accepted it.
	var m map[string]float64
	require.Eventually(t, func() bool {
		m = gather(t, reg)
		return m[`chunklock_webhook_alerts_delivered_total{kind="hold",webhook="`+name+`"}`] == 1
	}, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, want, m)
}

// TestBacklogInOrder: a webhook down while alerts pile up gets them all,
// in the order of the event log, once it answers again.
func TestBacklogInOrder(t *testing.T) {
	clock := backends.NewFakeClock(epoch)
	s := teststores.Memory(clock)
	t.Cleanup(func() { _ = s.Close() })
	pipeline(t, s)
	rcv := newReceiver(t)
	rcv.setDown(true)
	start(t, fastConfig(s, clock, rcv.URL))
	waitRecord(t, s, rcv.URL)
	holds(t, s, 1, 20)
	require.Eventually(t, func() bool { return len(rcv.all()) >= 3 }, 60*time.Second, 5*time.Millisecond, "the webhook is tried while down")
	require.Empty(t, rcv.accepted())
	rcv.setDown(false)
	got := rcv.waitAccepted(t, 20)
	require.Len(t, got, 20)
	for i, d := range got {
		require.Equal(t, fmt.Sprint(i+1), d.Alert.DataID, "delivery %d", i)
	}
	for _, d := range rcv.all() {
		require.Equal(t, "1", d.Alert.DataID, "nothing after the first alert is sent before it is accepted")
		if d.Accepted {
			break
		}
	}
}

// TestExactlyOnceAcrossReplicasAndRestarts: on each backend, two
// dispatchers on two stores sharing one database deliver one webhook;
// replicas stop and a new one starts while alerts keep coming, some while
// none runs. Every alert arrives exactly once, in order.
func TestExactlyOnceAcrossReplicasAndRestarts(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind.Name, func(t *testing.T) {
			clock := backends.NewFakeClock(epoch)
			stores := kind.Open(t, clock, 3)
			pipeline(t, stores[0])
			rcv := newReceiver(t)
			a := start(t, fastConfig(stores[0], clock, rcv.URL))
			b := start(t, fastConfig(stores[1], clock, rcv.URL))
			waitRecord(t, stores[0], rcv.URL)

			holds(t, stores[0], 1, 10)
			holds(t, stores[1], 11, 10)
			rcv.waitAccepted(t, 20)
			a.stop()
			holds(t, stores[1], 21, 10)
			rcv.waitAccepted(t, 30)
			b.stop()
			holds(t, stores[2], 31, 10) // no replica delivers now
			require.Equal(t, "", recordsOf(t, stores[2], rcv.URL).Holder, "a stopped replica hands the webhook back")
			start(t, fastConfig(stores[2], clock, rcv.URL))
			start(t, fastConfig(stores[0], clock, rcv.URL))
			holds(t, stores[0], 41, 10)
			got := rcv.waitAccepted(t, 50)

			require.Len(t, rcv.all(), 50, "no alert is sent twice: %v", ids(rcv.all()))
			seen := map[string]bool{}
			var lastSeq int64
			for i, d := range got {
				require.False(t, seen[d.ID], "alert %s delivered twice", d.ID)
				seen[d.ID] = true
				require.Equal(t, fmt.Sprint(i+1), d.Alert.DataID)
				require.Greater(t, d.Alert.Seq, lastSeq)
				lastSeq = d.Alert.Seq
			}
		})
	}
}

// TestTakeOverFromDeadReplica: a record held by a replica that stopped
// without handing it back (a crash) is taken over once it has not changed
// for a lease, and delivery resumes at its cursor.
func TestTakeOverFromDeadReplica(t *testing.T) {
	clock := backends.NewFakeClock(epoch)
	s := teststores.Memory(clock)
	t.Cleanup(func() { _ = s.Close() })
	pipeline(t, s)
	rcv := newReceiver(t)
	cfg := fastConfig(s, clock, rcv.URL)
	cfg.Replica = "crashed"
	crashed := start(t, cfg)
	waitRecord(t, s, rcv.URL)
	holds(t, s, 1, 1)
	rcv.waitAccepted(t, 1)
	crashed.stop()
	// Put the record back as the crashed replica left it: still its own.
	rec, err := s.Record(context.Background(), webhook.RecordKey(rcv.URL))
	require.NoError(t, err)
	val := strings.Replace(string(rec.Value), `"webhook"`, `"holder":"crashed","webhook"`, 1)
	_, ok, err := s.SwapRecord(context.Background(), webhook.RecordKey(rcv.URL), []byte(val), rec.Version)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "crashed", recordsOf(t, s, rcv.URL).Holder)

	holds(t, s, 2, 2)
	cfg = fastConfig(s, clock, rcv.URL)
	cfg.Lease, cfg.Timeout = 300*time.Millisecond, 100*time.Millisecond
	start(t, cfg)
	got := rcv.waitAccepted(t, 3)
	require.Len(t, rcv.all(), 3, "%v", ids(rcv.all()))
	require.Equal(t, []string{"1", "2", "3"}, []string{got[0].Alert.DataID, got[1].Alert.DataID, got[2].Alert.DataID})
}

// TestConfigChecks: what New refuses.
func TestConfigChecks(t *testing.T) {
	s := teststores.Memory(nil)
	t.Cleanup(func() { _ = s.Close() })
	base := webhook.Config{Store: s, URLs: []string{"http://127.0.0.1:1/x"}, Secret: secret}
	for name, change := range map[string]func(c *webhook.Config){
		"no secret":       func(c *webhook.Config) { c.Secret = nil },
		"no URL":          func(c *webhook.Config) { c.URLs = nil },
		"not http":        func(c *webhook.Config) { c.URLs = []string{"ftp://x/y"} },
		"relative":        func(c *webhook.Config) { c.URLs = []string{"/hook"} },
		"twice":           func(c *webhook.Config) { c.URLs = []string{"http://a/x", "http://a/x"} },
		"timeout > lease": func(c *webhook.Config) { c.Lease, c.Timeout = time.Second, time.Second },
		"negative cap":    func(c *webhook.Config) { c.LateCap = -1 },
	} {
		c := base
		change(&c)
		_, err := webhook.New(c)
		require.Error(t, err, name)
	}
	_, err := webhook.New(base)
	require.NoError(t, err)
	require.Equal(t, "https://h.example/p", webhook.Redact("https://user:pw@h.example/p?token=x"))
}

// gather returns every sample of reg as name{labels} -> value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	fams, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			v := m.GetCounter().GetValue()
			if f.GetType() == dto.MetricType_GAUGE {
				v = m.GetGauge().GetValue()
			}
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// ids lists the deliveries briefly: dataset/dataid and whether accepted.
func ids(ds []delivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s/%s:%v", d.Alert.Dataset, d.Alert.DataID, d.Accepted))
	}
	return out
}
