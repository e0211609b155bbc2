package postgres

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/stretchr/testify/require"
)

// TestMain makes every watcher of this package's tests depend on
// notifications alone: without a working notifier and listener, the watch
// tests wait for events that never come.
func TestMain(m *testing.M) {
	watchPoll = time.Hour
	os.Exit(m.Run())
}

// TestEventsHeldBackByOlderTransaction: a transaction that got its id
// first (so smaller seqs) records an event and commits after a later one.
// A watcher that had already seen the later event would step over the
// earlier one for good; so the later event must wait above the horizon
// until the older transaction ends, and then both arrive in seq order.
func TestEventsHeldBackByOlderTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := Open(ctx, Config{DSN: testDSN(t), Schema: freshSchema(t)})
	require.NoError(t, err)
	defer b.Close()
	s := engine.New(b, engine.WithClock(backends.NewFakeClock(time.Time{})))
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	ch, err := s.WatchEvents(ctx, backends.EventFilter{})
	require.NoError(t, err)

	// The older transaction gets its id by locking a candidate, records an
	// event and waits.
	require.NoError(t, b.Update(ctx, func(tx backends.Tx) error {
		return tx.AddCandidate(ctx, backends.Candidate{Job: "j", DataID: "0"})
	}))
	holding, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	releaseOlder := func() { once.Do(func() { close(release) }) }
	defer releaseOlder() // also when the test fails early: Close waits for the transaction
	older := make(chan error, 1)
	go func() {
		older <- b.Update(ctx, func(tx backends.Tx) error {
			if _, ok, err := nextCandidate(ctx, tx, "j"); err != nil || !ok {
				return fmt.Errorf("candidate: %v %v", ok, err)
			}
			close(holding)
			<-release
			return tx.AppendEvent(ctx, backends.Event{Actor: "older", Dataset: "src", DataID: "0", Role: backends.RoleOutput, To: backends.StatusReady})
		})
	}()
	<-holding

	// A later transaction commits first.
	_, err = s.Publish(ctx, "src", "1")
	require.NoError(t, err)
	select {
	case e := <-ch:
		t.Fatalf("event %s/%s delivered while an older transaction that records an event is still running", e.Dataset, e.DataID)
	case <-time.After(3 * heldBackAfter): // time for a watcher to get it wrong, precise horizon included
	}

	releaseOlder()
	require.NoError(t, <-older)
	first, second := recvEvent(t, ch), recvEvent(t, ch)
	require.Equal(t, []string{"0", "1"}, []string{first.DataID, second.DataID}, "events arrive in seq order, the older transaction's first")
	require.Less(t, first.Seq, second.Seq)
	page, err := s.Events(ctx, backends.EventFilter{})
	require.NoError(t, err)
	require.Equal(t, []backends.Event{first, second}, page.Events)
}

// TestEventsNotHeldBackByOtherTransactions: a long transaction that records
// no events in this store (here: any session of the cluster holding a
// transaction id) delays neither watchers nor Events for long.
func TestEventsNotHeldBackByOtherTransactions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openTest(t, backends.NewFakeClock(time.Time{}))
	defer s.Close()
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	ch, err := s.WatchEvents(ctx, backends.EventFilter{})
	require.NoError(t, err)
	other, err := admin.pool.Begin(ctx)
	require.NoError(t, err)
	defer other.Rollback(context.WithoutCancel(ctx))
	var xid string
	require.NoError(t, other.QueryRow(ctx, "SELECT pg_current_xact_id()::text").Scan(&xid))

	_, err = s.Publish(ctx, "src", "1")
	require.NoError(t, err)
	page, err := s.Events(ctx, backends.EventFilter{})
	require.NoError(t, err)
	require.Len(t, page.Events, 1, "Events lists the publish's event while transaction %s runs", xid)
	require.Equal(t, page.Events[0], recvEvent(t, ch), "the watcher gets it too")
}

// TestEventsReadOwnWrites: Events right after an operation lists its
// events, even while another transaction of the store that started
// earlier is running (ListEvents waits for it, within listWait).
func TestEventsReadOwnWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := Open(ctx, Config{DSN: testDSN(t), Schema: freshSchema(t)})
	require.NoError(t, err)
	defer b.Close()
	s := engine.New(b, engine.WithClock(backends.NewFakeClock(time.Time{})))
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	require.NoError(t, b.Update(ctx, func(tx backends.Tx) error {
		return tx.AddCandidate(ctx, backends.Candidate{Job: "j", DataID: "0"})
	}))
	holding, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	releaseOlder := func() { once.Do(func() { close(release) }) }
	defer releaseOlder() // also when the test fails early: Close waits for the transaction
	older := make(chan error, 1)
	go func() {
		older <- b.Update(ctx, func(tx backends.Tx) error {
			if _, ok, err := nextCandidate(ctx, tx, "j"); err != nil || !ok {
				return fmt.Errorf("candidate: %v %v", ok, err)
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	_, err = s.Publish(ctx, "src", "1")
	require.NoError(t, err)
	done := make(chan backends.EventPage, 1)
	go func() {
		page, err := s.Events(ctx, backends.EventFilter{})
		if err != nil {
			t.Errorf("events: %v", err)
		}
		done <- page
	}()
	time.Sleep(50 * time.Millisecond)
	releaseOlder()
	require.NoError(t, <-older)
	page := <-done
	require.Len(t, page.Events, 1, "the publish's own event is listed once the older transaction ends")
	require.Equal(t, "1", page.Events[0].DataID)
}

// TestWatchAcrossReplicas: a watcher on one server receives what another
// server commits, through the other server's notification (watchers do not
// poll in these tests), in order and exactly once.
func TestWatchAcrossReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schema := freshSchema(t)
	one, err := openStore(ctx, Config{DSN: testDSN(t), Schema: schema}, nil)
	require.NoError(t, err)
	defer one.Close()
	two, err := openStore(ctx, Config{DSN: testDSN(t), Schema: schema}, nil)
	require.NoError(t, err)
	defer two.Close()
	_, err = two.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	ch, err := one.WatchEvents(ctx, backends.EventFilter{Dataset: "src"})
	require.NoError(t, err)
	const n = 30
	go func() {
		for i := range n {
			if _, err := two.Publish(ctx, "src", fmt.Sprint(i)); err != nil {
				t.Errorf("publish: %v", err)
				return
			}
		}
	}()
	var got []string
	var last int64
	for range n {
		e := recvEvent(t, ch)
		require.Greater(t, e.Seq, last)
		last = e.Seq
		got = append(got, e.DataID)
	}
	for i := range n {
		require.Equal(t, fmt.Sprint(i), got[i])
	}
}
