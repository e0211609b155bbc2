package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/jackc/pgx/v5"
)

// Event watching. One goroutine per backend keeps a dedicated connection
// LISTENing on eventsChannel and wakes every watcher at each notification
// (and after each reconnect, to catch up on what was committed meanwhile).
// Each watcher keeps its own cursor and reads its filtered events by seq
// from the pool, only those below the horizon (events.go: events no
// transaction still running can precede), so it misses nothing and never
// sees an event twice.
//
// Notifications are not sent by the transactions that record events: a
// NOTIFY serialises the commits of every notifying transaction. Instead
// each server's notifier goroutine, kicked after such a commit, wakes the
// server's own watchers and sends one NOTIFY for the other servers, at most
// every notifyInterval. Events committed while an older transaction still
// runs wait above the horizon; a watcher that sees such events reads again
// after watchPending.

const (
	watchPage      = 256                   // events fetched per query
	watchRetry     = time.Second           // wait after a failed fetch
	watchPending   = 20 * time.Millisecond // wait while committed events are held back by older transactions
	notifyInterval = 50 * time.Millisecond // shortest time between two notifications of one server
	notifyTimeout  = 5 * time.Second       // bound on sending one notification
	listenMaxDelay = 5 * time.Second       // longest wait between reconnect attempts
)

// watchPoll is the safety net should a notification be lost (a variable so
// that tests can make watchers depend on notifications alone).
var watchPoll = 10 * time.Second

// eventsCommitted kicks the notifier after a commit that recorded events.
func (b *Backend) eventsCommitted() {
	select {
	case b.notify <- struct{}{}:
	default: // a kick is already pending
	}
}

// notifier wakes the watchers after this server commits events: its own at
// once, those of every server through one NOTIFY; then it rests for
// notifyInterval, so that any number of commits meanwhile cost one more
// notification. A lost notification costs latency only: watchers poll.
func (b *Backend) notifier() {
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-b.notify:
		}
		b.mu.Lock()
		h := b.hub
		b.mu.Unlock()
		if h != nil {
			h.wakeAll()
		}
		ctx, cancel := context.WithTimeout(b.ctx, notifyTimeout)
		_ = b.q.NotifyEvents(ctx, eventsChannel)
		cancel()
		select {
		case <-b.ctx.Done():
			return
		case <-time.After(notifyInterval):
		}
	}
}

// hub fans notifications out to watchers.
type hub struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

func (h *hub) subscribe() chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch
}

func (h *hub) unsubscribe(ch chan struct{}) {
	h.mu.Lock()
	delete(h.subs, ch)
	h.mu.Unlock()
}

func (h *hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default: // already woken
		}
	}
}

// startHub starts the listener on first use. The caller holds b.mu.
func (b *Backend) startHub() *hub {
	if b.hub != nil {
		return b.hub
	}
	h := &hub{subs: map[chan struct{}]struct{}{}}
	b.hub = h
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.listen(h)
	}()
	return h
}

// listen keeps a LISTEN connection open until the backend closes,
// reconnecting with a growing delay after failures.
func (b *Backend) listen(h *hub) {
	ctx := b.ctx
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, b.listenerConfig())
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+eventsChannel); err == nil {
				delay = 100 * time.Millisecond
				h.wakeAll() // events may have been committed while we were not listening
				for err == nil {
					if _, err = conn.WaitForNotification(ctx); err == nil {
						h.wakeAll()
					}
				}
			}
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(cctx)
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, listenMaxDelay)
	}
}

// listenerConfig names the LISTEN connection so operators can spot it.
func (b *Backend) listenerConfig() *pgx.ConnConfig {
	cfg := b.connCfg.Copy()
	cfg.RuntimeParams["application_name"] = listenerName(b.schema)
	return cfg
}

func listenerName(schema string) string {
	if schema == "" {
		return "chunklock events"
	}
	return "chunklock events " + schema
}

// WatchEvents streams the events matching f with seq greater than f.After,
// first those already recorded, then new ones as they are committed by any
// server. The channel closes when ctx ends or the backend closes. A slow
// reader slows its own watch only; it loses nothing.
func (b *Backend) WatchEvents(ctx context.Context, f backends.EventFilter) (<-chan backends.Event, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, backends.Unavailable(nil, "the PostgreSQL store is closed")
	}
	h := b.startHub()
	wake := h.subscribe() // before the first read: no notification can fall in between
	b.wg.Add(1)
	b.mu.Unlock()

	out := make(chan backends.Event, 64)
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(b.ctx, cancel)
	go func() {
		defer b.wg.Done()
		defer close(out)
		defer cancel()
		defer stop()
		defer h.unsubscribe(wake)
		b.watch(wctx, f, wake, out)
	}()
	return out, nil
}

// watch sends every new matching event, reading after each wake-up, after
// a failed read, soon again while committed events are held back, and
// every watchPoll in case a notification was lost.
func (b *Backend) watch(ctx context.Context, f backends.EventFilter, wake <-chan struct{}, out chan<- backends.Event) {
	timer := time.NewTimer(watchPoll)
	defer timer.Stop()
	r := eventReader{b: b}
	for {
		wait := watchPoll
		for {
			evs, pending, err := r.read(ctx, f, watchPage)
			if err != nil {
				wait = watchRetry
				break
			}
			if pending {
				wait = watchPending
			}
			for _, e := range evs {
				select {
				case out <- e:
					f.After = e.Seq
				case <-ctx.Done():
					return
				}
			}
			if len(evs) < watchPage {
				break
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-timer.C:
		}
	}
}
