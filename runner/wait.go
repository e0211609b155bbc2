package runner

import (
	"context"
	"sync"
	"time"

	"github.com/chunklock/chunklock/client"
)

// waiter waits, while the runner is idle, for something that may make a
// chunk claimable: an event on the jobs' rows or on their input datasets,
// from the events subscription; or, when the subscription is unavailable,
// the next poll.
//
// The subscription is opened the first time the runner is idle and kept
// until it exits; a goroutine drains it all along (so a long job never
// leaves the server's messages unread) and remembers the cursor of the last
// event, from which a broken subscription resumes without a gap. A new
// subscription is live only some moments after it is asked for, so the
// runner asks for work right after subscribing, and once more every few
// seconds while idle, in case an event fell in that moment.
type waiter struct {
	r        *loop
	idleWait time.Duration
	since    time.Time     // when the runner became idle; zero while busy
	wake     chan struct{} // an event came (capacity 1)
	sub      *client.Subscription
	drained  chan struct{} // closed when the drain goroutine ends
	retrySub time.Time     // when to try subscribing again after a failure

	mu     sync.Mutex
	cursor string // of the last event seen
}

// busy records that the runner got work.
func (w *waiter) busy() { w.since = time.Time{} }

func (w *waiter) close() {
	if w.sub != nil {
		_ = w.sub.Close()
		<-w.drained
	}
}

// pollInterval is how often an idle runner without the subscription asks
// for work.
func (w *waiter) pollInterval() time.Duration {
	return min(max(w.idleWait/10, 200*time.Millisecond), 2*time.Second)
}

// safetyPoll is how often an idle runner with the subscription asks for
// work anyway.
func (w *waiter) safetyPoll() time.Duration {
	return min(max(w.idleWait/4, time.Second), 5*time.Second)
}

func (w *waiter) subscribe(ctx context.Context) error {
	w.mu.Lock()
	after := w.cursor
	w.mu.Unlock()
	sub, err := w.r.cfg.Client.WatchEvents(ctx, after, w.r.filters...)
	if err != nil {
		return err
	}
	w.sub, w.drained = sub, make(chan struct{})
	go func(sub *client.Subscription, drained chan struct{}) {
		defer close(drained)
		for m := range sub.Messages() {
			if e, err := client.DecodeEvent(m); err == nil && e.Cursor != "" {
				w.mu.Lock()
				w.cursor = e.Cursor
				w.mu.Unlock()
			}
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}(sub, w.drained)
	return nil
}

// wait blocks until it is worth asking for work again (true), or the
// runner has been idle for idleWait or ctx ended (false).
func (w *waiter) wait(ctx context.Context) bool {
	if w.since.IsZero() {
		w.since = time.Now()
		w.r.logf("idle: waiting up to %s for new chunks", w.idleWait)
	}
	left := w.idleWait - time.Since(w.since)
	if left <= 0 {
		return false
	}
	if w.sub != nil {
		select {
		case <-w.drained:
			w.r.logf("events subscription ended (%v); polling every %s until it is back", w.r.cfg.Explain(w.sub.Err()), w.pollInterval())
			_ = w.sub.Close()
			w.sub = nil
			w.retrySub = time.Now().Add(2 * time.Second)
			return true
		default:
		}
	}
	if w.sub == nil && !time.Now().Before(w.retrySub) {
		if err := w.subscribe(ctx); err != nil {
			if ctx.Err() != nil {
				return false
			}
			w.retrySub = time.Now().Add(10 * time.Second)
			w.r.logf("events subscription unavailable (%v); polling every %s", w.r.cfg.Explain(err), w.pollInterval())
		} else {
			// What happened before the subscription started is not in
			// it: ask once more right away.
			return true
		}
	}
	poll := w.pollInterval()
	var drained <-chan struct{}
	if w.sub != nil {
		poll, drained = w.safetyPoll(), w.drained
	}
	timer := time.NewTimer(min(poll, left))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return time.Since(w.since) < w.idleWait
	case <-w.wake:
		return true
	case <-drained:
		return true // reported at the next wait
	}
}
