package postgres

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Reading the event log.
//
// An event's seq is (id of its transaction) << 20 | (position in it), so
// seqs do not follow commit order, and a reader walking the log by seq must
// never return an event while a transaction that may still record a smaller
// seq is running. Readers therefore return only events below a horizon:
//
//   - the cheap horizon: the oldest transaction id still running, from the
//     reader's own snapshot (EventsHorizon). Everything below is final. But
//     any transaction of the PostgreSQL cluster holds it back, a long one in
//     another database as much as one of ours.
//   - the precise horizon, used when the cheap one is stuck: the oldest
//     running transaction that may record events in this store. Every
//     transaction of Update takes the shared event-writer lock before it has
//     an id; a running transaction without that lock records no events
//     here. It costs a read of pg_locks.
//
// Events committed above the horizon are "pending": they become readable
// when the transactions below them end.

// heldBackAfter is how long readers rely on the cheap horizon while it does
// not move and events wait above it, before they compute the precise one.
const heldBackAfter = 200 * time.Millisecond

// eventWritersSQL reads, after taking the statement's snapshot, the
// transactions running as of the snapshot (ids as bigint), the snapshot's
// xmax, and the 32-bit ids of the transactions holding the event-writer lock
// (class_id $1 and obj_id $2: the two halves of its key). Hand-written:
// sqlc does not know pg_locks.
const eventWritersSQL = `-- eventWriters
WITH l AS MATERIALIZED (
    SELECT locktype, database, classid, objid, objsubid, virtualtransaction, transactionid, mode, granted
    FROM pg_locks
)
SELECT pg_snapshot_xmax(s)::text::bigint AS xmax,
       ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(s) AS x)::bigint[] AS running,
       ARRAY(SELECT t.transactionid::text::bigint
             FROM l AS t
             JOIN l AS a ON a.virtualtransaction = t.virtualtransaction
             WHERE t.locktype = 'transactionid' AND t.mode = 'ExclusiveLock' AND t.granted
               AND a.locktype = 'advisory' AND a.granted AND a.objsubid = 1
               AND a.database = (SELECT d.oid FROM pg_database AS d WHERE d.datname = current_database())
               AND a.classid::text::bigint = $1::bigint AND a.objid::text::bigint = $2::bigint)::bigint[] AS writers
FROM pg_current_snapshot() AS s`

// preciseHorizon returns the seq below which every event is final, ignoring
// the running transactions that record no events in this store:
//
//  1. one snapshot and, after it, the holders of the event-writer lock;
//  2. of the transactions running as of the snapshot that did not hold the
//     lock, those that have ended since may have been writers that ended
//     between the two reads (their events are committed after the
//     snapshot): they still count. Those still running did not hold the
//     lock, which writers take before they have an id: they are not writers.
func (b *Backend) preciseHorizon(ctx context.Context) (int64, error) {
	var xmax int64
	var running, writers []int64
	key := uint64(b.writers)
	err := b.pool.QueryRow(ctx, eventWritersSQL, int64(key>>32), int64(key&0xffffffff)).Scan(&xmax, &running, &writers)
	if err != nil {
		return 0, mapErr(err, "reading the running transactions")
	}
	isWriter := make(map[int64]bool, len(writers))
	for _, w := range writers {
		isWriter[w] = true
	}
	horizon := xmax
	var others []int64
	for _, x := range running {
		if isWriter[x&0xffffffff] {
			horizon = min(horizon, x)
		} else {
			others = append(others, x)
		}
	}
	if len(others) > 0 {
		ended, err := b.q.FirstEnded(ctx, others)
		if err != nil {
			return 0, mapErr(err, "reading transaction status")
		}
		if ended > 0 {
			horizon = min(horizon, ended)
		}
	}
	return horizon << 20, nil
}

// horizon returns a seq below which every event is final, and the highest
// seq committed. precise asks for the precise horizon when events wait above
// the cheap one.
func (b *Backend) horizon(ctx context.Context, precise bool) (horizon, last int64, err error) {
	h, err := b.q.EventsHorizon(ctx)
	if err != nil {
		return 0, 0, mapErr(err, "reading events")
	}
	if precise && h.LastSeq >= h.Horizon {
		p, err := b.preciseHorizon(ctx)
		if err != nil {
			return 0, 0, err
		}
		h.Horizon = max(h.Horizon, p)
	}
	return h.Horizon, h.LastSeq, nil
}

// ListEvents pages through the event log in seq order. Events committed
// before the call are included: while transactions that started earlier
// keep them above the horizon, it waits for those of them that record
// events here (short: they are this store's own transactions), at most
// listWait, and then returns the events that are final.
func (b *Backend) ListEvents(ctx context.Context, f backends.EventFilter) (backends.EventPage, error) {
	if err := b.usable(ctx); err != nil {
		return backends.EventPage{}, err
	}
	horizon, last, err := b.horizon(ctx, false)
	if err != nil {
		return backends.EventPage{}, err
	}
	if last >= horizon && last > f.After {
		if horizon, err = b.waitHorizon(ctx, last); err != nil {
			return backends.EventPage{}, err
		}
	}
	return b.eventPage(ctx, f, horizon)
}

var _ backends.FinalEventLister = (*Backend)(nil)

// ListFinalEvents lists the events below the horizon, without waiting for
// those above it (the pruner looks for old events only). The horizon is
// the precise one when events wait above the cheap one, so that a long
// transaction elsewhere in the cluster does not hide events from it.
func (b *Backend) ListFinalEvents(ctx context.Context, f backends.EventFilter) (backends.EventPage, error) {
	if err := b.usable(ctx); err != nil {
		return backends.EventPage{}, err
	}
	horizon, _, err := b.horizon(ctx, true)
	if err != nil {
		return backends.EventPage{}, err
	}
	return b.eventPage(ctx, f, horizon)
}

// eventPage is the page of f's events below horizon.
func (b *Backend) eventPage(ctx context.Context, f backends.EventFilter, horizon int64) (backends.EventPage, error) {
	first := backends.PageSize(f.First)
	evs, err := b.listEvents(ctx, f, horizon, first+1)
	if err != nil {
		return backends.EventPage{}, err
	}
	var page backends.EventPage
	if len(evs) > first {
		evs, page.HasNextPage = evs[:first], true
	}
	page.Events = evs
	return page, nil
}

// listWait bounds how long ListEvents waits for the horizon to pass the
// events committed before it was called.
const listWait = 2 * time.Second

// waitHorizon waits until the horizon passes seq, or listWait has passed,
// and returns the last horizon computed: the cheap one at first, the
// precise one after heldBackAfter.
func (b *Backend) waitHorizon(ctx context.Context, seq int64) (int64, error) {
	start := time.Now()
	delay := time.Millisecond
	for {
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return 0, mapErr(ctx.Err(), "reading events")
		case <-timer.C:
		}
		horizon, _, err := b.horizon(ctx, time.Since(start) >= heldBackAfter)
		if err != nil {
			return 0, err
		}
		if horizon > seq || time.Since(start) >= listWait {
			return horizon, nil
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// eventReader reads a watcher's events, switching to the precise horizon
// while the cheap one is stuck.
type eventReader struct {
	b          *Backend
	cheap      int64     // last cheap horizon seen with events pending
	stuckSince time.Time // when cheap last moved
}

// read reads up to limit events matching f after f.After that are final.
// pending tells that committed events wait above the horizon: read again
// soon.
func (r *eventReader) read(ctx context.Context, f backends.EventFilter, limit int) (evs []backends.Event, pending bool, err error) {
	h, err := r.b.q.EventsHorizon(ctx)
	if err != nil {
		return nil, false, mapErr(err, "reading events")
	}
	horizon := h.Horizon
	if h.LastSeq >= h.Horizon && h.LastSeq > f.After {
		now := time.Now()
		if h.Horizon != r.cheap {
			r.cheap, r.stuckSince = h.Horizon, now
		} else if now.Sub(r.stuckSince) >= heldBackAfter {
			p, err := r.b.preciseHorizon(ctx)
			if err != nil {
				return nil, false, err
			}
			horizon = max(horizon, p)
		}
	}
	evs, err = r.b.listEvents(ctx, f, horizon, limit)
	return evs, err == nil && h.LastSeq >= horizon && h.LastSeq > f.After, err
}

// DeleteEvents removes events by seq, in one statement (its own
// transaction) that touches no status row.
func (b *Backend) DeleteEvents(ctx context.Context, evs []backends.Event) (int, error) {
	if err := b.usable(ctx); err != nil {
		return 0, err
	}
	seqs := make([]int64, len(evs))
	for i, e := range evs {
		seqs[i] = e.Seq
	}
	n, err := b.q.DeleteEvents(ctx, seqs)
	if err != nil {
		return 0, mapErr(err, "pruning events")
	}
	return int(n), nil
}
