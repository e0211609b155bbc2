package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// eventVal is an event as stored; Seq lives in the key (events/) or follows
// from the commit revision (evq/).
type eventVal struct {
	T  int64           `json:"t"`
	Ac string          `json:"ac,omitempty"`
	J  string          `json:"j,omitempty"`
	D  string          `json:"d"`
	I  string          `json:"i"`
	Ro backends.Role   `json:"ro"`
	Fr backends.Status `json:"fr,omitempty"`
	To backends.Status `json:"to,omitempty"`
	N  int             `json:"n,omitempty"`
	E  string          `json:"e,omitempty"`
	R  string          `json:"r,omitempty"`
	F  string          `json:"f,omitempty"` // ReadFor
}

func toEventVal(e backends.Event) eventVal {
	return eventVal{T: micros(e.Time), Ac: e.Actor, J: e.Job, D: e.Dataset, I: e.DataID, Ro: e.Role,
		Fr: e.From, To: e.To, N: e.Attempt, E: e.Executor, R: e.Reason, F: e.ReadFor}
}

func (v eventVal) event(seq int64) backends.Event {
	return backends.Event{Seq: seq, Time: fromMicros(v.T), Actor: v.Ac, Job: v.J, Dataset: v.D, DataID: v.I,
		Role: v.Ro, From: v.Fr, To: v.To, Attempt: v.N, Executor: v.E, Reason: v.R, ReadFor: v.F}
}

// seqOf is the Seq of the i-th event of the transaction committed at rev.
func seqOf(rev int64, i int) int64 { return rev<<16 | int64(i) }

func seqHex(seq int64) string { return fmt.Sprintf("%016x", seq) }

func matches(f backends.EventFilter, e backends.Event) bool {
	return (f.Dataset == "" || e.Dataset == f.Dataset) && (f.Job == "" || e.Job == f.Job) && (f.DataID == "" || e.DataID == f.DataID)
}

// decodePending reads one evq/ entry committed at rev.
func decodePending(key, val []byte, rev int64) ([]backends.Event, error) {
	var vals []eventVal
	if err := json.Unmarshal(val, &vals); err != nil {
		return nil, fmt.Errorf("etcd: pending events at %s are corrupt: %w", key, err)
	}
	out := make([]backends.Event, len(vals))
	for i, v := range vals {
		out[i] = v.event(seqOf(rev, i))
	}
	return out, nil
}

// mover sequences pending events (evq/) into events/ and evc/: after this
// backend's commits (at most every moverDelay, so that a busy store moves
// many transactions' events per round) and every few seconds for what other
// processes left behind.
const moverDelay = 50 * time.Millisecond

func (b *Backend) mover() {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-b.bg.Done():
			return
		case <-b.kick:
			select {
			case <-time.After(moverDelay):
			case <-b.bg.Done():
				return
			}
			select {
			case <-b.kick:
			default:
			}
		case <-tick.C:
		}
		_ = b.moveEvents(b.bg) // a failure is retried on the next round
	}
}

// moveEvents moves every pending event. Any number of movers may run at
// once: an event's destination and value follow from its evq/ key alone,
// and the chunk counts a transaction changed are folded with the delete of
// its evq/ key, guarded (foldAndDrop).
func (b *Backend) moveEvents(ctx context.Context) error {
	kb, err := b.ensureCounts(ctx)
	if err != nil {
		return err
	}
	base := b.key("evq") + "/"
	for {
		resp, err := b.get(ctx, base, clientv3.WithPrefix(), clientv3.WithLimit(64))
		if err != nil {
			return err
		}
		// The events are written only while their evq/ entries are there:
		// a mover that read an entry another mover has since moved (and a
		// sweep may have pruned) must not write its events back.
		var ops []clientv3.Op
		var cmps []clientv3.Cmp
		var last *mvccpb.KeyValue // the entry cmps compared last
		guard := func(kv *mvccpb.KeyValue) {
			if kv != last {
				last = kv
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision))
			}
		}
		flush := func() error {
			if len(ops) == 0 {
				return nil
			}
			resp, err := b.txn(ctx, cmps, ops, nil)
			ops, cmps, last = ops[:0], cmps[:0], nil
			if err != nil {
				return mapErr(err, "sequence events")
			}
			if !resp.Succeeded {
				return errFoldConflict // another mover moved them: read again
			}
			return nil
		}
		changes := make([]map[string]jobCounts, len(resp.Kvs))
		for i, kv := range resp.Kvs {
			evs, err := decodePending(kv.Key, kv.Value, kv.ModRevision)
			if err != nil {
				return err
			}
			if changes[i] = map[string]jobCounts{}; kv.ModRevision > kb.rev {
				addEvents(changes[i], evs)
			}
			for _, e := range evs {
				if len(ops)+len(cmps)+3 > b.cfg.MaxTxnOps {
					if err := flush(); err != nil {
						return err
					}
				}
				guard(kv)
				v, _ := json.Marshal(toEventVal(e))
				seq := seqHex(e.Seq)
				ops = append(ops,
					clientv3.OpPut(b.key("events", seq), string(v)),
					clientv3.OpPut(b.key("evc", e.Dataset, backends.SortKey(e.DataID), seq), ""))
			}
		}
		if err := flush(); err != nil {
			return err
		}
		if err := b.foldAndDrop(ctx, kb, resp.Kvs, changes); err != nil {
			return err
		}
		if !resp.More {
			return nil
		}
	}
}

// eventStream yields the sequenced events after a Seq in Seq order, a page
// at a time, at one revision.
type eventStream struct {
	b     *Backend
	ctx   context.Context
	rev   int64
	from  string
	to    string
	index bool // keys are evc/ entries naming events/ keys
	buf   []backends.Event
	done  bool
}

func (s *eventStream) next() (backends.Event, bool, error) {
	for len(s.buf) == 0 {
		if s.done {
			return backends.Event{}, false, nil
		}
		if err := s.fill(); err != nil {
			return backends.Event{}, false, err
		}
	}
	e := s.buf[0]
	s.buf = s.buf[1:]
	return e, true, nil
}

func (s *eventStream) fill() error {
	const page = 256
	resp, err := s.b.get(s.ctx, s.from, clientv3.WithRange(s.to), clientv3.WithLimit(page), clientv3.WithRev(s.rev))
	if err != nil {
		return err
	}
	if !resp.More || len(resp.Kvs) == 0 {
		s.done = true
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	s.from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	if !s.index {
		for _, kv := range resp.Kvs {
			e, err := s.b.decodeEvent(kv.Key, kv.Value)
			if err != nil {
				return err
			}
			s.buf = append(s.buf, e)
		}
		return nil
	}
	keys := make([]string, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		k := string(kv.Key)
		keys[i] = s.b.key("events", k[strings.LastIndexByte(k, '/')+1:])
	}
	for len(keys) > 0 {
		n := min(len(keys), 64)
		ops := make([]clientv3.Op, n)
		for i, k := range keys[:n] {
			ops[i] = clientv3.OpGet(k, clientv3.WithRev(s.rev))
		}
		tr, err := s.b.txn(s.ctx, nil, ops, nil)
		if err != nil {
			return mapErr(err, "read events")
		}
		for i := range keys[:n] {
			for _, kv := range tr.Responses[i].GetResponseRange().Kvs {
				e, err := s.b.decodeEvent(kv.Key, kv.Value)
				if err != nil {
					return err
				}
				s.buf = append(s.buf, e)
			}
		}
		keys = keys[n:]
	}
	return nil
}

func (b *Backend) decodeEvent(key, val []byte) (backends.Event, error) {
	k := string(key)
	seq, err := strconv.ParseInt(k[strings.LastIndexByte(k, '/')+1:], 16, 64)
	if err != nil {
		return backends.Event{}, fmt.Errorf("etcd: event key %s is corrupt", k)
	}
	var v eventVal
	if err := json.Unmarshal(val, &v); err != nil {
		return backends.Event{}, fmt.Errorf("etcd: event %s is corrupt: %w", k, err)
	}
	return v.event(seq), nil
}

// listEvents returns up to f.First events after f.After matching f, read at
// revision rev (0: now), and the revision it read at.
func (b *Backend) listEvents(ctx context.Context, f backends.EventFilter, rev int64) (backends.EventPage, int64, error) {
	pbase := b.key("evq") + "/"
	var pending []backends.Event
	resp, err := b.get(ctx, pbase, clientv3.WithPrefix(), clientv3.WithRev(rev))
	if err != nil {
		return backends.EventPage{}, 0, err
	}
	rev = resp.Header.Revision
	for _, kv := range resp.Kvs {
		evs, err := decodePending(kv.Key, kv.Value, kv.ModRevision)
		if err != nil {
			return backends.EventPage{}, 0, err
		}
		for _, e := range evs {
			if e.Seq > f.After && matches(f, e) {
				pending = append(pending, e)
			}
		}
	}
	sortEvents(pending)
	start := seqHex(max(f.After+1, 0))
	s := &eventStream{b: b, ctx: ctx, rev: rev}
	if f.Dataset != "" && f.DataID != "" {
		base := b.key("evc", f.Dataset, backends.SortKey(f.DataID)) + "/"
		s.from, s.to, s.index = base+start, clientv3.GetPrefixRangeEnd(base), true
	} else {
		base := b.key("events") + "/"
		s.from, s.to = base+start, clientv3.GetPrefixRangeEnd(base)
	}
	var page backends.EventPage
	add := func(e backends.Event) bool {
		if len(page.Events) == f.First {
			page.HasNextPage = true
			return false
		}
		page.Events = append(page.Events, e)
		return true
	}
	last := f.After
	for {
		e, ok, err := s.next()
		if err != nil {
			return backends.EventPage{}, 0, err
		}
		if ok && !matches(f, e) {
			continue
		}
		for len(pending) > 0 && (!ok || pending[0].Seq <= e.Seq) {
			p := pending[0]
			pending = pending[1:]
			if p.Seq <= last {
				continue
			}
			if !add(p) {
				return page, rev, nil
			}
			last = p.Seq
		}
		if !ok {
			return page, rev, nil
		}
		if e.Seq <= last {
			continue // moved while pending too: already listed
		}
		if !add(e) {
			return page, rev, nil
		}
		last = e.Seq
	}
}

func sortEvents(es []backends.Event) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Seq < es[j-1].Seq; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

func (b *Backend) ListEvents(ctx context.Context, f backends.EventFilter) (backends.EventPage, error) {
	if f.First <= 0 {
		f.First = backends.DefaultPageSize
	}
	page, _, err := b.listEvents(ctx, f, 0)
	return page, err
}

// WatchEvents replays the events after f.After, then follows new commits
// through an etcd watch on evq/. When the watch breaks (leader lost,
// compaction, a member gone) it replays from the last event sent and
// watches again, so the stream neither skips nor repeats events.
func (b *Backend) WatchEvents(ctx context.Context, f backends.EventFilter) (<-chan backends.Event, error) {
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(b.bg, cancel)
	ch := make(chan backends.Event, 64)
	started := b.goBackground(func() {
		defer close(ch)
		defer stop()
		defer cancel()
		b.watchLoop(wctx, f, ch)
	})
	if !started {
		stop()
		cancel()
		return nil, backends.Unavailable(nil, "etcd store is closed")
	}
	return ch, nil
}

// stallAfter is how long a watch waits for its subscriber to take an event
// before it gives up its etcd watch: etcd's client buffers watch responses
// without bound, so a subscriber that stops reading must not keep one open.
// The events it misses are replayed, a page at a time, once it reads again.
const stallAfter = time.Second

// watchLoop sends the events of f to ch until ctx ends: a replay from the
// last event sent, then an etcd watch, again and again.
func (b *Backend) watchLoop(ctx context.Context, f backends.EventFilter, ch chan<- backends.Event) {
	last := f.After
	// send waits as long as it takes: replay reads one page at a time, so
	// a subscriber that does not read holds back the reads.
	send := func(e backends.Event) bool {
		select {
		case ch <- e:
			last = e.Seq
			return true
		case <-ctx.Done():
			return false
		}
	}
	// offer waits stallAfter at most, then reports a stall.
	offer := func(e backends.Event) (sent, stalled bool) {
		select {
		case ch <- e:
			last = e.Seq
			return true, false
		default:
		}
		t := time.NewTimer(stallAfter)
		defer t.Stop()
		select {
		case ch <- e:
			last = e.Seq
			return true, false
		case <-ctx.Done():
			return false, false
		case <-t.C:
			return false, true
		}
	}
	for ctx.Err() == nil {
		rev, ok := b.replay(ctx, f, &last, send)
		if !ok {
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		if !b.follow(ctx, f, rev, &last, offer) {
			return
		}
	}
}

// replay sends every event after *last at one revision and returns it.
func (b *Backend) replay(ctx context.Context, f backends.EventFilter, last *int64, send func(backends.Event) bool) (int64, bool) {
	var rev int64
	for {
		g := f
		g.After, g.First = *last, backends.MaxPageSize
		page, r, err := b.listEvents(ctx, g, rev)
		if err != nil {
			return 0, false
		}
		rev = r
		for _, e := range page.Events {
			if !send(e) {
				return 0, false
			}
		}
		if !page.HasNextPage {
			return rev, true
		}
	}
}

// follow watches evq/ after rev and offers new events; it returns false
// when ctx ended, true when a replay is due: the watch broke, or the
// subscriber stalled and the watch was cancelled so that etcd's client
// stops buffering for it.
func (b *Backend) follow(ctx context.Context, f backends.EventFilter, rev int64, last *int64, offer func(backends.Event) (sent, stalled bool)) bool {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	b.watches.Add(1)
	defer b.watches.Add(-1)
	for wr := range b.cli.Watch(wctx, b.key("evq")+"/", clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithFilterDelete()) {
		if wr.Err() != nil {
			break
		}
		for _, ev := range wr.Events {
			if !ev.IsCreate() {
				continue
			}
			evs, err := decodePending(ev.Kv.Key, ev.Kv.Value, ev.Kv.ModRevision)
			if err != nil {
				continue
			}
			for _, e := range evs {
				if e.Seq <= *last || !matches(f, e) {
					continue
				}
				if sent, stalled := offer(e); !sent {
					return stalled && ctx.Err() == nil
				}
			}
		}
	}
	return ctx.Err() == nil
}

// DeleteEvents removes sequenced events (events/ and their evc/ index
// entries), in transactions of at most MaxTxnOps keys that read and guard
// nothing. Events still pending (evq/), which ListEvents lists too, are
// sequenced first (as the mover does, and with it), so that none comes
// back after it was pruned. Another process moving the same events at
// once (errFoldConflict) moves them; an event it has not moved yet when
// the deletes run is left, sequenced later, and pruned by a later sweep.
func (b *Backend) DeleteEvents(ctx context.Context, evs []backends.Event) (int, error) {
	var err error
	for range 3 {
		if err = b.moveEvents(ctx); !errors.Is(err, errFoldConflict) {
			break
		}
	}
	if err != nil && !errors.Is(err, errFoldConflict) {
		return 0, err
	}
	n := 0
	per := max(b.cfg.MaxTxnOps/2, 1)
	for len(evs) > 0 {
		part := evs[:min(len(evs), per)]
		evs = evs[len(part):]
		ops := make([]clientv3.Op, 0, 2*len(part))
		for _, e := range part {
			seq := seqHex(e.Seq)
			ops = append(ops,
				clientv3.OpDelete(b.key("events", seq)),
				clientv3.OpDelete(b.key("evc", e.Dataset, backends.SortKey(e.DataID), seq)))
		}
		tr, err := b.txn(ctx, nil, ops, nil)
		if err != nil {
			return n, mapErr(err, "prune events")
		}
		for i := 0; i < len(tr.Responses); i += 2 {
			n += int(tr.Responses[i].GetResponseDeleteRange().Deleted)
		}
	}
	return n, nil
}
