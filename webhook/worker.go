package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/internal/urlerr"
)

// A worker delivers one stream of one webhook. Its record in the store
// (state) holds the cursor and the replica delivering it: the holder. The holder
// rewrites the record after every delivery and at least every Lease/3,
// and sends only while its last write started less than Lease/3 ago; a
// request lasts at most Timeout (≤ Lease/3). Another replica takes the
// record over only after seeing the same version of it for a whole Lease
// on its own clock (no clocks are compared across machines), by a
// compare-and-swap on that version: by then the holder has stopped
// sending, and its next write fails, which stops it for good. One replica
// sends at a time; the cursor names the last alert delivered, so a new
// holder, or a restarted server, starts right after it.

// The streams of a webhook's alerts, each delivered by its own worker.
const (
	// streamTransitions: hold, fail and lease_expired alerts, from the
	// event log; its record is the webhook's record of old.
	streamTransitions = "transitions"
	// streamDeadlines: late and late_summary alerts.
	streamDeadlines = "deadlines"
)

// state is the record of a stream of a webhook in the store, as JSON.
type state struct {
	// Webhook is the URL, redacted, for an operator reading the store.
	Webhook string `json:"webhook"`
	// Seq is the last event of the event log looked at (transitions).
	Seq int64 `json:"seq"`
	// Marks holds, per dataset with a deadline, its watermark (deadlines).
	Marks map[string]lateMark `json:"marks,omitempty"`
	// Late is how versions before the deadlines stream kept, in the
	// webhook's one record, the last dataid whose deadline was checked
	// ("" when none had passed yet). It is kept as read, and seeds the
	// deadlines stream's record when that is first written.
	Late map[string]string `json:"late,omitempty"`
	// Holder is the replica delivering the stream; "" when none.
	Holder string `json:"holder,omitempty"`
}

var errLost = errors.New("another replica delivers this webhook now")

// eventPage is how many events one read of the log returns.
const eventPage = 100

type worker struct {
	d      *Dispatcher
	url    string
	name   string // redacted URL
	stream string
	key    string
	// While held: the record as this replica last wrote it, and when that
	// write started.
	held    bool
	rec     backends.Record
	st      state
	wroteAt time.Time
	// While not held: the version of the record last seen, and since when.
	seen     int64
	seenAt   time.Time
	lateAt   time.Time // when late chunks were last checked
	failures int       // consecutive failed passes, for the log
}

func newWorker(d *Dispatcher, u, stream string) *worker {
	key := recordKey(u)
	if stream == streamDeadlines {
		key = lateRecordKey(u)
	}
	return &worker{d: d, url: u, name: Redact(u), stream: stream, key: key}
}

// lateRecordKey is the key of the record of a webhook's deadlines.
func lateRecordKey(u string) string { return recordKey(u) + "/late" }

func (w *worker) run(ctx context.Context) {
	defer w.handBack()
	for ctx.Err() == nil {
		err := w.pass(ctx)
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, errLost):
			w.d.log.Info("webhook: another replica delivers it now", "webhook", w.name, "stream", w.stream)
		case err != nil:
			w.failures++
			if w.failures == 1 || w.failures%60 == 0 {
				w.d.log.Warn("webhook: reading the store failed; retrying", "webhook", w.name, "stream", w.stream,
					"err", err, "failures", w.failures)
			}
		default:
			w.failures = 0
		}
		w.d.metrics.delivering.set(w.name, w.stream, map[bool]float64{true: 1}[w.held])
		if !w.held {
			w.d.metrics.lag.drop(w.name, w.stream)
		}
		sleep(ctx, w.d.cfg.Poll)
	}
}

// pass takes the record if it is free, then, holding it, delivers what
// waits.
func (w *worker) pass(ctx context.Context) error {
	if !w.held {
		if err := w.acquire(ctx); err != nil || !w.held {
			return err
		}
	}
	return w.deliver(ctx)
}

// acquire takes the record when it is new, free, this replica's, or
// unchanged for a whole lease.
func (w *worker) acquire(ctx context.Context) error {
	store := w.d.cfg.Store
	rec, err := store.Record(ctx, w.key)
	if err != nil {
		return err
	}
	if rec.Version == 0 {
		st, err := w.fresh(ctx)
		if err != nil {
			return err
		}
		return w.take(ctx, rec, st)
	}
	var st state
	if err := json.Unmarshal(rec.Value, &st); err != nil {
		return fmt.Errorf("the record %s of webhook %s is corrupt: %w", w.key, w.name, err)
	}
	switch {
	case st.Holder == "" || st.Holder == w.d.cfg.Replica:
		return w.take(ctx, rec, st)
	case rec.Version != w.seen:
		w.seen, w.seenAt = rec.Version, time.Now()
		return nil
	case time.Since(w.seenAt) >= w.d.cfg.Lease:
		w.d.log.Info("webhook: taking over delivery from a replica that stopped renewing", "webhook", w.name,
			"stream", w.stream, "replica", st.Holder)
		return w.take(ctx, rec, st)
	}
	return nil
}

// fresh is the state of a stream never delivered before. A new webhook
// gets the transitions from now on; its deadlines start where the
// webhook's record of a version before streams left them, if any (else
// each dataset at its first check).
func (w *worker) fresh(ctx context.Context) (state, error) {
	store := w.d.cfg.Store
	if w.stream == streamTransitions {
		seq, err := headSeq(ctx, store)
		return state{Webhook: w.name, Seq: seq}, err
	}
	st := state{Webhook: w.name, Marks: map[string]lateMark{}}
	rec, err := store.Record(ctx, recordKey(w.url))
	if err != nil || rec.Version == 0 {
		return st, err
	}
	var old state
	if err := json.Unmarshal(rec.Value, &old); err != nil {
		return st, fmt.Errorf("the record %s of webhook %s is corrupt: %w", recordKey(w.url), w.name, err)
	}
	for dataset, last := range old.Late {
		if last != "" {
			st.Marks[dataset] = lateMark{Last: last}
		}
	}
	return st, nil
}

// take writes st as this replica's over rec.
func (w *worker) take(ctx context.Context, rec backends.Record, st state) error {
	st.Holder = w.d.cfg.Replica
	if w.stream == streamDeadlines && st.Marks == nil {
		st.Marks = map[string]lateMark{}
	}
	val, err := json.Marshal(st)
	if err != nil {
		return err
	}
	wctx, cancel := w.detached(ctx)
	defer cancel()
	start := time.Now()
	got, ok, err := w.d.cfg.Store.SwapRecord(wctx, w.key, val, rec.Version)
	if err != nil {
		return err
	}
	if !ok {
		w.seen, w.seenAt = got.Version, time.Now()
		return nil
	}
	w.held, w.rec, w.st, w.wroteAt = true, got, st, start
	w.d.log.Info("webhook: this replica delivers it", "webhook", w.name, "stream", w.stream, "after_seq", st.Seq)
	return nil
}

// save writes the record with this replica's cursor. Losing the swap
// means another replica took over (errLost); an error leaves it unknown
// whether the write happened, so the record is read again before going on.
func (w *worker) save(ctx context.Context) error {
	if !w.held {
		return errLost
	}
	val, err := json.Marshal(w.st)
	if err != nil {
		return err
	}
	wctx, cancel := w.detached(ctx)
	defer cancel()
	start := time.Now()
	got, ok, err := w.d.cfg.Store.SwapRecord(wctx, w.key, val, w.rec.Version)
	if err != nil {
		w.held = false
		return err
	}
	if !ok {
		w.held = false
		w.seen, w.seenAt = got.Version, time.Now()
		return errLost
	}
	w.rec, w.wroteAt = got, start
	return nil
}

// detached bounds a write by Timeout but not by ctx: a stop lets the
// write in flight (a request, the cursor after it) finish, rather than
// leave it undecided and the alert to be sent again.
func (w *worker) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), w.d.cfg.Timeout)
}

// keep renews the lease when a third of it has passed since the last
// write, so that a request started now ends while the lease holds.
func (w *worker) keep(ctx context.Context) error {
	if !w.held {
		return errLost
	}
	if time.Since(w.wroteAt) < w.d.cfg.Lease/3 {
		return nil
	}
	return w.save(ctx)
}

// handBack frees the record as the process stops, so that another replica
// or the restarted server goes on at once. It reads the record first: a
// write cut short by the stop may have made this replica the holder
// without its knowing.
func (w *worker) handBack() {
	defer func() {
		w.held = false
		w.d.metrics.delivering.set(w.name, w.stream, 0)
		w.d.metrics.lag.drop(w.name, w.stream)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), w.d.cfg.Timeout)
	defer cancel()
	rec, err := w.d.cfg.Store.Record(ctx, w.key)
	var st state
	if err == nil && rec.Version > 0 {
		err = json.Unmarshal(rec.Value, &st)
	}
	if err == nil && (rec.Version == 0 || st.Holder != w.d.cfg.Replica) {
		return
	}
	if err == nil {
		if w.held && rec.Version == w.rec.Version {
			st = w.st // the cursor as written
		}
		st.Holder = ""
		var val []byte
		if val, err = json.Marshal(st); err == nil {
			_, _, err = w.d.cfg.Store.SwapRecord(ctx, w.key, val, rec.Version)
		}
	}
	if err != nil {
		w.d.log.Warn("webhook: handing delivery back failed; another replica takes over after the lease", "webhook", w.name,
			"stream", w.stream, "err", err)
	}
}

// deliver sends what waits in the worker's stream: the alerts of the event
// log after the cursor, in order; or, every LateEvery, those of chunks
// whose deadline passed.
func (w *worker) deliver(ctx context.Context) error {
	if w.stream == streamDeadlines {
		if time.Since(w.lateAt) >= w.d.cfg.LateEvery {
			if err := w.checkLate(ctx); err != nil {
				return err
			}
			w.lateAt = time.Now()
		}
		w.d.metrics.lag.set(w.name, w.stream, 0)
		return w.keep(ctx)
	}
	store := w.d.cfg.Store
	for {
		if err := w.keep(ctx); err != nil {
			return err
		}
		page, err := store.Events(ctx, backends.EventFilter{After: w.st.Seq, First: eventPage})
		if err != nil {
			return err
		}
		dirty := false
		for _, e := range page.Events {
			w.st.Seq = e.Seq
			a, ok := alertOf(e)
			if !ok {
				dirty = true
				continue
			}
			if err := w.send(ctx, a); err != nil {
				return err
			}
			if err := w.save(ctx); err != nil {
				return err
			}
			dirty = false
		}
		if dirty {
			if err := w.save(ctx); err != nil {
				return err
			}
		}
		if !page.HasNextPage || len(page.Events) == 0 {
			break
		}
	}
	w.d.metrics.lag.set(w.name, w.stream, 0)
	return w.keep(ctx)
}

// send delivers one alert, trying again with exponential backoff until the
// webhook answers 2xx, for as long as this replica holds the record.
func (w *worker) send(ctx context.Context, a Alert) error {
	body, err := json.Marshal(a)
	if err != nil {
		return err
	}
	backoff := w.d.cfg.MinBackoff
	for attempt := 1; ; attempt++ {
		if err := w.keep(ctx); err != nil {
			return err
		}
		w.d.metrics.lag.set(w.name, w.stream, max(0, w.d.cfg.Clock.Now().Sub(a.Time).Seconds()))
		err := w.post(ctx, a, body)
		if err == nil {
			w.d.metrics.attempts.WithLabelValues(w.name, "ok").Inc()
			w.d.metrics.delivered.WithLabelValues(w.name, a.Kind).Inc()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.d.metrics.attempts.WithLabelValues(w.name, "error").Inc()
		w.d.log.Warn("webhook: delivery failed; trying again", "webhook", w.name, "stream", w.stream, "id", a.ID,
			"attempt", attempt, "err", err, "retry_in", backoff)
		if err := w.wait(ctx, backoff); err != nil {
			return err
		}
		backoff = min(backoff*2, w.d.cfg.MaxBackoff)
	}
}

// post makes one HTTP request, signed as it leaves: each attempt carries
// its own timestamp.
func (w *worker) post(ctx context.Context, a Alert, body []byte) error {
	ctx, cancel := w.detached(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building the request: %w", urlerr.Cause(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "chunklock-webhook")
	req.Header.Set(HeaderSignature, Sign(w.d.cfg.Secret, body))
	req.Header.Set(HeaderSignatureV2, SignAt(w.d.cfg.Secret, body, time.Now()))
	req.Header.Set(HeaderEventID, a.ID)
	req.Header.Set(HeaderEventKind, a.Kind)
	resp, err := w.d.cfg.Client.Do(req)
	if err != nil {
		return urlerr.Cause(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

// wait sleeps d, renewing the lease on the way.
func (w *worker) wait(ctx context.Context, d time.Duration) error {
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		if !sleep(ctx, min(left, w.d.cfg.Lease/4)) {
			return ctx.Err()
		}
		if err := w.keep(ctx); err != nil {
			return err
		}
	}
}

// sleep waits d or until ctx ends; it tells whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// headSeq returns the seq of the last event in the log (0 when it is
// empty), by doubling and halving: a few dozen short reads, whatever the
// log's length.
func headSeq(ctx context.Context, store backends.Store) (int64, error) {
	after := func(seq int64) (int64, bool, error) {
		p, err := store.Events(ctx, backends.EventFilter{After: seq, First: 1})
		if err != nil || len(p.Events) == 0 {
			return 0, false, err
		}
		return p.Events[0].Seq, true, nil
	}
	lo, ok, err := after(0)
	if err != nil || !ok {
		return 0, err
	}
	// lo is the seq of an event; hi has none after it.
	step := int64(1)
	hi := lo + step
	for {
		s, ok, err := after(hi)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		lo, step = s, step*2
		hi = lo + step
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		s, ok, err := after(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = s
		} else {
			hi = mid
		}
	}
	return lo, nil
}
