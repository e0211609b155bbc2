package backends

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// engine implements Store on a Backend. Every operation is written here
// once; backends only read and write rows.
type engine struct {
	b        Backend
	clock    Clock
	cat      atomic.Pointer[versionedCatalog] // see catalogcache.go
	maxBatch int                              // see live.go and next.go
	maxKeys  int                              // KeyBudget; 0: no bound
	live     combiner
	next     nextQueues
}

// New builds the Store on a backend. A nil clock is the system clock.
func New(b Backend, clock Clock) Store {
	if clock == nil {
		clock = SystemClock{}
	}
	e := &engine{b: b, clock: clock}
	if bb, ok := b.(Batcher); ok {
		e.maxBatch = bb.MaxBatch()
	}
	if kb, ok := b.(KeyBudget); ok {
		e.maxKeys = kb.MaxBatchKeys()
	}
	return e
}

// expireBatch bounds how many expired claims one ExpireLeases call reads at once.
const expireBatch = 256

func (e *engine) catalog(ctx context.Context) (*Catalog, error) {
	ds, js, err := e.b.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	return NewCatalog(ds, js), nil
}

func outputKey(job Job, dataid string) RowKey {
	return RowKey{Dataset: job.Output, DataID: dataid, Job: job.ID, Role: RoleOutput}
}

// chunkOutputKey is the OUTPUT row of a chunk: written by its producer, or
// with an empty job for a source dataset.
func chunkOutputKey(cat *Catalog, dataset, dataid string) RowKey {
	return RowKey{Dataset: dataset, DataID: dataid, Job: cat.Producer(dataset), Role: RoleOutput}
}

func event(ctx context.Context, old *StatusRow, r StatusRow) Event {
	from := StatusNone
	if old != nil {
		from = old.Status
	}
	return Event{
		Time: r.UpdatedAt, Actor: ActorFrom(ctx), Job: r.Job, Dataset: r.Dataset, DataID: r.DataID,
		Role: r.Role, From: from, To: r.Status, Attempt: r.Attempt, Executor: r.Executor, Reason: r.Reason,
	}
}

// put writes a row and records the transition from old.
func put(ctx context.Context, tx Tx, old *StatusRow, r StatusRow) error {
	if err := tx.PutRow(ctx, r); err != nil {
		return err
	}
	return tx.AppendEvent(ctx, event(ctx, old, r))
}

// del deletes a row and records the transition to "no row".
func del(ctx context.Context, tx Tx, old StatusRow, now time.Time, reason string) error {
	if err := tx.DeleteRow(ctx, old.RowKey); err != nil {
		return err
	}
	ev := event(ctx, &old, old)
	ev.Time, ev.To, ev.Reason, ev.Attempt = now, StatusNone, reason, old.Attempt-1
	return tx.AppendEvent(ctx, ev)
}

// enqueueConsumers adds candidates for every job reading (dataset, dataid)
// whose output there is free for producers: the chunk just became READY.
func enqueueConsumers(ctx context.Context, tx Tx, cat *Catalog, dataset, dataid string) error {
	consumers := cat.Consumers(dataset)
	if len(consumers) == 0 {
		return nil
	}
	keys := make([]RowKey, len(consumers))
	for i, j := range consumers {
		keys[i] = outputKey(cat.Jobs[j], dataid)
	}
	outs, err := tx.GetRows(ctx, keys)
	if err != nil {
		return err
	}
	for i, j := range consumers {
		st := statusOf(outs[i])
		if !FreeForProducers(st) {
			continue
		}
		if err := tx.AddCandidate(ctx, Candidate{Job: j, DataID: dataid, Resubmit: st == StatusResubmit}); err != nil {
			return err
		}
	}
	return nil
}

// claimKeys are the rows the rules need about job at dataid: its OUTPUT
// row, then the OUTPUT row of each input chunk, then its INPUT rows.
func claimKeys(cat *Catalog, job Job, dataid string) []RowKey {
	keys := []RowKey{outputKey(job, dataid)}
	for _, in := range job.Inputs {
		keys = append(keys, chunkOutputKey(cat, in, dataid))
	}
	for _, in := range job.Inputs {
		keys = append(keys, RowKey{Dataset: in, DataID: dataid, Job: job.ID, Role: RoleInput})
	}
	return keys
}

// claimStateOf builds the claim state from the rows of claimKeys.
func claimStateOf(job Job, dataid string, rows []*StatusRow) ClaimState {
	n := len(job.Inputs)
	return ClaimState{Job: job, DataID: dataid, Output: rows[0], Upstream: rows[1 : 1+n], Local: rows[1+n:]}
}

// loadClaimState reads what the rules need about job at dataid.
func loadClaimState(ctx context.Context, tx Tx, cat *Catalog, job Job, dataid string) (ClaimState, error) {
	rows, err := tx.GetRows(ctx, claimKeys(cat, job, dataid))
	if err != nil {
		return ClaimState{}, err
	}
	return claimStateOf(job, dataid, rows), nil
}

// lockClaimState locks the chunks a claim of job at dataid touches and
// reads what the rules need about them.
func lockClaimState(ctx context.Context, tx Tx, cat *Catalog, job Job, dataid string) (ClaimState, error) {
	if err := tx.LockChunks(ctx, dataid, []string{job.Output}, job.Inputs); err != nil {
		return ClaimState{}, err
	}
	return loadClaimState(ctx, tx, cat, job, dataid)
}

// claimIn evaluates and, when allowed, makes a claim inside tx. A force
// also invalidates what downstream jobs computed from the chunk it
// rewrites, as resubmit with cascade does, and is refused while any of
// them reads or writes at that dataid.
func (e *engine) claimIn(ctx context.Context, tx Tx, cat *Catalog, job Job, dataid, executor string, mode ClaimMode) (*Claim, error) {
	if mode != ModeForce {
		st, err := lockClaimState(ctx, tx, cat, job, dataid)
		if err != nil {
			return nil, err
		}
		return e.claimState(ctx, tx, cat, st, executor, mode)
	}
	if err := tx.LockChunks(ctx, dataid, cat.Downstream(job.Output), job.Inputs); err != nil {
		return nil, err
	}
	st, err := loadClaimState(ctx, tx, cat, job, dataid)
	if err != nil {
		return nil, err
	}
	reason := "upstream " + job.Output + "/" + dataid + " forced by " + ActorFrom(ctx)
	if _, err := e.cascade(ctx, tx, cat, job.Output, dataid, reason); err != nil {
		return nil, err
	}
	return e.claimState(ctx, tx, cat, st, executor, mode)
}

// claimState makes the claim st describes, if the rules allow it, inside
// the transaction that locked and loaded st.
func (e *engine) claimState(ctx context.Context, tx Tx, cat *Catalog, st ClaimState, executor string, mode ClaimMode) (*Claim, error) {
	job, dataid := st.Job, st.DataID
	if bs := st.Blockers(mode); len(bs) > 0 {
		return nil, Locked(bs, "job %q cannot claim dataid %q now: %s", job.ID, dataid, describeBlockers(bs))
	}
	fence, err := tx.NextFence(ctx, job.Output, dataid)
	if err != nil {
		return nil, err
	}
	now := e.clock.Now()
	w := st.Apply(executor, NewToken(job.ID, job.Output, dataid, fence), fence, now)
	if w.Superseded {
		ev := event(ctx, st.Output, *st.Output)
		ev.Time, ev.To, ev.Reason = now, StatusRunning, "superseded by force"
		if err := tx.AppendEvent(ctx, ev); err != nil {
			return nil, err
		}
	}
	if err := put(ctx, tx, st.Output, w.Output); err != nil {
		return nil, err
	}
	for i, in := range w.Inputs {
		if err := put(ctx, tx, st.Local[i], in); err != nil {
			return nil, err
		}
	}
	withAccess(cat, job, &w.Claim)
	return &w.Claim, nil
}

// withAccess adds to a claim what its answer carries besides its rows:
// the definitions of its output and input datasets and its job's
// environment, from the catalog version of the claim's own transaction.
func withAccess(cat *Catalog, job Job, c *Claim) {
	c.Datasets = make([]Dataset, 0, 1+len(job.Inputs))
	c.Datasets = append(c.Datasets, cat.Datasets[job.Output])
	for _, in := range job.Inputs {
		c.Datasets = append(c.Datasets, cat.Datasets[in])
	}
	c.Env = job.Env
}

func describeBlockers(bs []Blocker) string {
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		st := string(b.Status)
		if st == "" {
			st = "no row"
		}
		parts = append(parts, string(b.Kind)+" "+b.Dataset+"/"+b.DataID+" ("+st+")")
	}
	return strings.Join(parts, ", ")
}

func validExecutor(executor string) error {
	if executor == "" || len(executor) > 256 {
		return InvalidArgument("executor must be 1-256 characters")
	}
	if !utf8.ValidString(executor) || strings.ContainsRune(executor, 0) {
		return InvalidArgument("executor must be valid UTF-8 text without NUL")
	}
	return nil
}

func (e *engine) FindNext(ctx context.Context, jobID, executor string) (*Claim, error) {
	if err := validExecutor(executor); err != nil {
		return nil, err
	}
	if e.maxBatch >= 2 {
		return e.findNextBatched(ctx, jobID, executor)
	}
	var claim *Claim
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		var err error
		claim, err = e.findNext(ctx, cat, jobID, executor)
		return err
	})
	return claim, err
}

func (e *engine) findNext(ctx context.Context, cat *opCatalog, jobID, executor string) (*Claim, error) {
	job, err := cat.Job(jobID)
	if err != nil {
		return nil, err
	}
	if job.Paused {
		return nil, nil
	}
	// One transaction per candidate: a candidate that turns out not to be
	// claimable is dropped and committed, so no transaction holds locks on
	// more than one dataid.
	for {
		var claim *Claim
		var done bool
		err := e.update(ctx, cat, func(tx Tx) error {
			claim, done = nil, false
			c, ok, err := tx.NextCandidate(ctx, job.ID)
			if err != nil {
				return err
			}
			if !ok {
				done = true
				return nil
			}
			st, err := lockClaimState(ctx, tx, cat.Catalog, job, c.DataID)
			if err != nil {
				return err
			}
			// A candidate's Resubmit flag was true when it was added, but the
			// output may have moved on since (claimed from RESUBMIT, then
			// failed; or a duplicate hint). Put it back in its true place in
			// the queue, so that RESUBMIT chunks come first and the others
			// strictly by dataid.
			out := statusOf(st.Output)
			if isResubmit := out == StatusResubmit; c.Resubmit != isResubmit && FreeForProducers(out) {
				if err := tx.DropCandidate(ctx, c); err != nil {
					return err
				}
				return tx.AddCandidate(ctx, Candidate{Job: job.ID, DataID: c.DataID, Resubmit: isResubmit})
			}
			claim, err = e.claimState(ctx, tx, cat.Catalog, st, executor, ModeNext)
			if err != nil && !errors.Is(err, ErrLocked) {
				return err
			}
			done = err == nil
			return tx.DropCandidate(ctx, c)
		})
		if err != nil {
			return nil, err
		}
		if done {
			return claim, nil
		}
	}
}

func (e *engine) claimOne(ctx context.Context, jobID, dataid, executor string, mode ClaimMode) (*Claim, error) {
	if err := ValidateDataID(dataid); err != nil {
		return nil, err
	}
	if err := validExecutor(executor); err != nil {
		return nil, err
	}
	var claim *Claim
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		job, err := cat.Job(jobID)
		if err != nil {
			return err
		}
		return e.update(ctx, cat, func(tx Tx) error {
			var err error
			claim, err = e.claimIn(ctx, tx, cat.Catalog, job, dataid, executor, mode)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return claim, nil
}

func (e *engine) Claim(ctx context.Context, job, dataid, executor string) (*Claim, error) {
	return e.claimOne(ctx, job, dataid, executor, ModeClaim)
}

func (e *engine) Force(ctx context.Context, job, dataid, executor string) (*Claim, error) {
	return e.claimOne(ctx, job, dataid, executor, ModeForce)
}

func (e *engine) Heartbeat(ctx context.Context, token string) (*Claim, error) {
	var claim Claim
	err := e.withLiveClaim(ctx, token, "", func(ctx context.Context, tx Tx, cat *Catalog, job Job, out StatusRow, _ []*StatusRow, now time.Time) error {
		out.LeaseExpiresAt = now.Add(time.Duration(job.LeaseSeconds) * time.Second)
		out.UpdatedAt = now
		claim = ClaimOf(job, out)
		withAccess(cat, job, &claim)
		return tx.PutRow(ctx, out)
	})
	if err != nil {
		return nil, err
	}
	return &claim, nil
}

// end finishes a live claim: complete, fail or release.
func (e *engine) end(ctx context.Context, tx Tx, cat *Catalog, how Ending, job Job, out StatusRow, inputs []*StatusRow, reason string, now time.Time) error {
	ins := make([]StatusRow, 0, len(inputs))
	for _, in := range inputs {
		if in == nil { // cannot happen for a live claim; keep going without it
			continue
		}
		ins = append(ins, *in)
	}
	newOut, newIns, keep := EndClaim(how, job, out, ins, reason, now)
	for i, n := range newIns {
		if n == nil {
			if err := del(ctx, tx, ins[i], now, "released"); err != nil {
				return err
			}
			continue
		}
		if err := put(ctx, tx, &ins[i], *n); err != nil {
			return err
		}
	}
	st := StatusNone
	if keep {
		if err := put(ctx, tx, &out, newOut); err != nil {
			return err
		}
		st = newOut.Status
	} else if err := del(ctx, tx, out, now, "released"); err != nil {
		return err
	}
	switch {
	case st == StatusReady:
		return enqueueConsumers(ctx, tx, cat, out.Dataset, out.DataID)
	case FreeForProducers(st):
		return tx.AddCandidate(ctx, Candidate{Job: job.ID, DataID: out.DataID, Resubmit: st == StatusResubmit})
	}
	return nil
}

func (e *engine) Complete(ctx context.Context, token string) error {
	return e.withLiveClaim(ctx, token, EndComplete, func(ctx context.Context, tx Tx, cat *Catalog, job Job, out StatusRow, inputs []*StatusRow, now time.Time) error {
		return e.end(ctx, tx, cat, EndComplete, job, out, inputs, "", now)
	})
}

// MaxReasonBytes bounds a failure or hold reason; longer ones keep their tail.
const MaxReasonBytes = 4096

// validReason makes a reason storable anywhere: valid UTF-8 (a job's stderr
// tail may hold any bytes), no NUL, at most MaxReasonBytes, cut on a
// character boundary and keeping the tail, where errors usually are.
func validReason(reason string) (string, error) {
	reason = strings.ReplaceAll(strings.ToValidUTF8(reason, "\uFFFD"), "\x00", "")
	if len(reason) > MaxReasonBytes {
		cut := len(reason) - MaxReasonBytes
		for cut < len(reason) && !utf8.RuneStart(reason[cut]) {
			cut++
		}
		reason = reason[cut:]
	}
	return reason, nil
}

func (e *engine) Fail(ctx context.Context, token, reason string) error {
	reason, err := validReason(reason)
	if err != nil {
		return err
	}
	return e.withLiveClaim(ctx, token, EndFail, func(ctx context.Context, tx Tx, cat *Catalog, job Job, out StatusRow, inputs []*StatusRow, now time.Time) error {
		return e.end(ctx, tx, cat, EndFail, job, out, inputs, reason, now)
	})
}

func (e *engine) Release(ctx context.Context, token string) error {
	return e.withLiveClaim(ctx, token, EndRelease, func(ctx context.Context, tx Tx, cat *Catalog, job Job, out StatusRow, inputs []*StatusRow, now time.Time) error {
		return e.end(ctx, tx, cat, EndRelease, job, out, inputs, "released", now)
	})
}

func (e *engine) ExpireLeases(ctx context.Context) (int, error) {
	ctx = WithActor(ctx, "reaper")
	n := 0
	var cat *Catalog
	for {
		now := e.clock.Now()
		keys, err := e.b.ExpiredClaims(ctx, now, expireBatch)
		if err != nil || len(keys) == 0 {
			return n, err
		}
		if cat == nil {
			if cat, err = e.catalog(ctx); err != nil {
				return n, err
			}
		}
		progressed := false
		for _, key := range keys {
			job, ok := cat.Jobs[key.Job]
			var expired bool
			err := e.b.Update(ctx, func(tx Tx) error {
				expired = false
				inputs := job.Inputs
				if !ok || job.Output != key.Dataset {
					inputs = nil
				}
				if err := tx.LockChunks(ctx, key.DataID, []string{key.Dataset}, nil); err != nil {
					return err
				}
				keys := []RowKey{key}
				for _, in := range inputs {
					keys = append(keys, RowKey{Dataset: in, DataID: key.DataID, Job: key.Job, Role: RoleInput})
				}
				rows, err := tx.GetRows(ctx, keys)
				if err != nil {
					return err
				}
				out := rows[0]
				// Heartbeat, completion or another reaper may have come first.
				if out == nil || out.Status != StatusRunning || now.Before(out.LeaseExpiresAt) {
					return nil
				}
				if !ok {
					job = Job{ID: key.Job, Output: key.Dataset, MaxAttempts: DefaultMaxAttempts}
				}
				expired = true
				return e.end(ctx, tx, cat, EndExpire, job, *out, rows[1:], ReasonLeaseExpired, now)
			})
			if err != nil {
				return n, err
			}
			if expired {
				n++
				progressed = true
			}
		}
		if !progressed {
			return n, nil
		}
	}
}

func (e *engine) Publish(ctx context.Context, dataset, dataid string) (StatusRow, error) {
	if err := ValidateDataID(dataid); err != nil {
		return StatusRow{}, err
	}
	var row StatusRow
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		return e.publish(ctx, cat, dataset, dataid, &row)
	})
	return row, err
}

func (e *engine) publish(ctx context.Context, cat *opCatalog, dataset, dataid string, out *StatusRow) error {
	if _, err := cat.Dataset(dataset); err != nil {
		return err
	}
	if p := cat.Producer(dataset); p != "" {
		return InvalidArgument("dataset %q is produced by job %q; only source datasets are published", dataset, p)
	}
	return e.update(ctx, cat, func(tx Tx) error {
		if err := tx.LockChunks(ctx, dataid, []string{dataset}, nil); err != nil {
			return err
		}
		key := chunkOutputKey(cat.Catalog, dataset, dataid)
		rows, err := tx.GetRows(ctx, []RowKey{key})
		if err != nil {
			return err
		}
		old := rows[0]
		if old != nil && old.Status == StatusReady {
			*out = *old
			return nil
		}
		if old != nil && old.Status == StatusHold {
			return Locked([]Blocker{{Dataset: dataset, DataID: dataid, Kind: BlockerOutputLocked, Status: StatusHold}},
				"chunk %s/%s is on HOLD; resubmit it before publishing", dataset, dataid)
		}
		row := StatusRow{RowKey: key, Status: StatusReady, UpdatedAt: e.clock.Now()}
		if old != nil {
			row.Attempt = old.Attempt
		}
		if err := put(ctx, tx, old, row); err != nil {
			return err
		}
		*out = row
		return enqueueConsumers(ctx, tx, cat.Catalog, dataset, dataid)
	})
}

func (e *engine) Resubmit(ctx context.Context, dataset, dataid string, cascade bool) ([]StatusRow, error) {
	if err := ValidateDataID(dataid); err != nil {
		return nil, err
	}
	var changed []StatusRow
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		if _, err := cat.Dataset(dataset); err != nil {
			return err
		}
		affected := []string{dataset}
		if cascade {
			affected = cat.Downstream(dataset)
		}
		return e.update(ctx, cat, func(tx Tx) error {
			changed = nil
			if err := tx.LockChunks(ctx, dataid, affected, nil); err != nil {
				return err
			}
			now := e.clock.Now()
			rows, err := tx.GetRows(ctx, []RowKey{chunkOutputKey(cat.Catalog, dataset, dataid)})
			if err != nil {
				return err
			}
			root := rows[0]
			if root == nil {
				return NotFound("chunk %s/%s has no status yet; nothing to resubmit", dataset, dataid)
			}
			if !ResubmitFrom(root.Status) {
				return Locked([]Blocker{{Dataset: dataset, DataID: dataid, Job: root.Job, Kind: BlockerOutputLocked, Status: root.Status}},
					"chunk %s/%s is %s; resubmit it once the claim ends", dataset, dataid, root.Status)
			}
			r, err := resubmitRow(ctx, tx, *root, "resubmitted", now)
			if err != nil {
				return err
			}
			changed = append(changed, r)
			if !cascade {
				return nil
			}
			more, err := e.cascade(ctx, tx, cat.Catalog, dataset, dataid, "upstream "+dataset+"/"+dataid+" resubmitted")
			changed = append(changed, more...)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

func (e *engine) Hold(ctx context.Context, dataset, dataid, reason string) (StatusRow, error) {
	if err := ValidateDataID(dataid); err != nil {
		return StatusRow{}, err
	}
	reason, _ = validReason(reason)
	var row StatusRow
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		if _, err := cat.Dataset(dataset); err != nil {
			return err
		}
		return e.update(ctx, cat, func(tx Tx) error {
			if err := tx.LockChunks(ctx, dataid, []string{dataset}, nil); err != nil {
				return err
			}
			key := chunkOutputKey(cat.Catalog, dataset, dataid)
			rows, err := tx.GetRows(ctx, []RowKey{key})
			if err != nil {
				return err
			}
			old := rows[0]
			if old != nil && old.Status == StatusRunning {
				return Locked([]Blocker{{Dataset: dataset, DataID: dataid, Job: old.Job, Kind: BlockerOutputLocked, Status: StatusRunning}},
					"chunk %s/%s is RUNNING; hold it once the claim ends", dataset, dataid)
			}
			row = StatusRow{RowKey: key}
			if old != nil {
				row = *old
			}
			row.Status, row.Reason, row.UpdatedAt, row.LeaseExpiresAt, row.PrevStatus, row.Ended = StatusHold, reason, e.clock.Now(), time.Time{}, StatusNone, ""
			return put(ctx, tx, old, row)
		})
	})
	return row, err
}

func (e *engine) UpsertDataset(ctx context.Context, d Dataset) (Dataset, error) {
	if err := ValidateDataset(d); err != nil {
		return Dataset{}, err
	}
	now := e.clock.Now()
	d.CreatedAt, d.UpdatedAt = now, now
	defer e.forgetCatalog()
	return e.b.PutDataset(ctx, d)
}

func (e *engine) Dataset(ctx context.Context, id string) (Dataset, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return Dataset{}, err
	}
	return cat.Dataset(id)
}

func (e *engine) Datasets(ctx context.Context) ([]Dataset, error) {
	ds, _, err := e.b.Catalog(ctx)
	return ds, err
}

func (e *engine) UpsertJob(ctx context.Context, j Job) (Job, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return Job{}, err
	}
	j, err = cat.ValidateJob(j)
	if err != nil {
		return Job{}, err
	}
	old, existed := cat.Jobs[j.ID]
	enqueue := !existed || !slices.Equal(old.Inputs, j.Inputs)
	if existed && j.Key == (JobKey{}) {
		j.Key = old.Key
	}
	now := e.clock.Now()
	j.CreatedAt, j.UpdatedAt = now, now
	defer e.forgetCatalog()
	return e.b.PutJob(ctx, j, enqueue)
}

func (e *engine) Job(ctx context.Context, id string) (Job, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return Job{}, err
	}
	return cat.Job(id)
}

func (e *engine) Jobs(ctx context.Context) ([]Job, error) {
	_, js, err := e.b.Catalog(ctx)
	return js, err
}

func (e *engine) SetCredential(ctx context.Context, c Credential) error {
	cat, err := e.catalog(ctx)
	if err != nil {
		return err
	}
	job, err := cat.Job(c.Job)
	if err != nil {
		return err
	}
	if _, err := cat.Dataset(c.Dataset); err != nil {
		return err
	}
	if c.Dataset != job.Output && !slices.Contains(job.Inputs, c.Dataset) {
		return InvalidArgument("job %q does not use dataset %q; credentials are stored only for datasets a job reads or writes", c.Job, c.Dataset)
	}
	if len(c.Ciphertext) == 0 {
		return InvalidArgument("credential ciphertext is empty")
	}
	c.UpdatedAt = e.clock.Now()
	return e.b.PutCredential(ctx, c)
}

func (e *engine) Credentials(ctx context.Context, job string) ([]Credential, error) {
	return e.b.Credentials(ctx, job)
}

func validateChunkFilter(f ChunkFilter) error {
	for _, id := range []string{f.From, f.To} {
		if id != "" {
			if err := ValidateDataID(id); err != nil {
				return err
			}
		}
	}
	switch f.Role {
	case "", RoleInput, RoleOutput:
	default:
		return InvalidArgument("role %q is not INPUT or OUTPUT", f.Role)
	}
	switch f.Status {
	case StatusNone, StatusRunning, StatusReady, StatusFailed, StatusResubmit, StatusHold, StatusDone, StatusError:
	default:
		return InvalidArgument("status %q is unknown", f.Status)
	}
	return nil
}

func (e *engine) Chunks(ctx context.Context, f ChunkFilter) (ChunkPage, error) {
	if err := validateChunkFilter(f); err != nil {
		return ChunkPage{}, err
	}
	f.First = PageSize(f.First)
	return e.b.ListRows(ctx, f)
}

func (e *engine) Chunk(ctx context.Context, dataset, dataid string) (ChunkDetail, error) {
	if err := ValidateDataID(dataid); err != nil {
		return ChunkDetail{}, err
	}
	cat, err := e.catalog(ctx)
	if err != nil {
		return ChunkDetail{}, err
	}
	if _, err := cat.Dataset(dataset); err != nil {
		return ChunkDetail{}, err
	}
	keys := []RowKey{chunkOutputKey(cat, dataset, dataid)}
	for _, j := range cat.Consumers(dataset) {
		keys = append(keys, RowKey{Dataset: dataset, DataID: dataid, Job: j, Role: RoleInput})
	}
	var rows []*StatusRow
	err = e.b.Update(ctx, func(tx Tx) error {
		var err error
		rows, err = tx.GetRows(ctx, keys)
		return err
	})
	if err != nil {
		return ChunkDetail{}, err
	}
	d := ChunkDetail{Dataset: dataset, DataID: dataid, Output: rows[0]}
	for _, r := range rows {
		if r != nil {
			d.Rows = append(d.Rows, *r)
		}
	}
	d.Locks = DeriveLocks(d.Rows)
	return d, nil
}

func (e *engine) Claims(ctx context.Context, job string) ([]Claim, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return nil, err
	}
	f := ChunkFilter{Role: RoleOutput, Status: StatusRunning, First: MaxPageSize}
	if job != "" {
		j, err := cat.Job(job)
		if err != nil {
			return nil, err
		}
		f.Job, f.Dataset = j.ID, j.Output
	}
	var claims []Claim
	now := e.clock.Now()
	for {
		page, err := e.b.ListRows(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Rows {
			if !now.Before(r.LeaseExpiresAt) {
				continue // past its lease: not live, even before the reaper fails it
			}
			c := ClaimOf(cat.Jobs[r.Job], r)
			withAccess(cat, cat.Jobs[r.Job], &c)
			claims = append(claims, c)
		}
		if !page.HasNextPage || len(page.Rows) == 0 {
			return claims, nil
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
}

func (e *engine) Locks(ctx context.Context, f LockFilter) ([]Lock, error) {
	page, err := e.b.ListRows(ctx, ChunkFilter{Dataset: f.Dataset, Job: f.Job, First: MaxPageSize})
	if err != nil {
		return nil, err
	}
	locks := DeriveLocks(page.Rows)
	if locks == nil {
		locks = []Lock{}
	}
	return locks, nil
}

func (e *engine) Blockers(ctx context.Context, jobID, dataid string) ([]Blocker, error) {
	if err := ValidateDataID(dataid); err != nil {
		return nil, err
	}
	cat, err := e.catalog(ctx)
	if err != nil {
		return nil, err
	}
	job, err := cat.Job(jobID)
	if err != nil {
		return nil, err
	}
	var bs []Blocker
	err = e.b.Update(ctx, func(tx Tx) error {
		st, err := loadClaimState(ctx, tx, cat, job, dataid)
		bs = st.Blockers(ModeClaim)
		return err
	})
	if bs == nil {
		bs = []Blocker{}
	}
	return bs, err
}

func (e *engine) Events(ctx context.Context, f EventFilter) (EventPage, error) {
	if f.DataID != "" {
		if err := ValidateDataID(f.DataID); err != nil {
			return EventPage{}, err
		}
	}
	f.First = PageSize(f.First)
	return e.b.ListEvents(ctx, f)
}

func (e *engine) WatchEvents(ctx context.Context, f EventFilter) (<-chan Event, error) {
	return e.b.WatchEvents(ctx, f)
}

func (e *engine) LockResource(ctx context.Context, client, resource string, mode LockMode, ttl time.Duration) (ResourceLock, error) {
	if err := validClient(client); err != nil {
		return ResourceLock{}, err
	}
	if err := ValidText("resource", resource, MaxLocatorBytes); err != nil || resource == "" {
		return ResourceLock{}, InvalidArgument("resource must be a URI of 1-%d bytes of UTF-8 text without NUL", MaxLocatorBytes)
	}
	if mode != LockRead && mode != LockWrite {
		return ResourceLock{}, InvalidArgument("lock mode %q is not READ or WRITE", mode)
	}
	ttl, err := resourceTTL(ttl)
	if err != nil {
		return ResourceLock{}, err
	}
	now := e.clock.Now()
	return e.b.TakeResourceLock(ctx, ResourceLock{Client: client, Resource: resource, Mode: mode, CreatedAt: now, ExpiresAt: now.Add(ttl)}, now)
}

func validClient(client string) error {
	if err := ValidText("client", client, 256); err != nil || client == "" {
		return InvalidArgument("client must be 1-256 bytes of UTF-8 text without NUL")
	}
	return nil
}

// resourceTTL applies the default to a TTL not given and refuses one
// beyond MaxResourceLockTTL: every lock expires.
func resourceTTL(ttl time.Duration) (time.Duration, error) {
	switch {
	case ttl <= 0:
		return DefaultResourceLockTTL, nil
	case ttl > MaxResourceLockTTL:
		return 0, InvalidArgument("a resource lock lasts at most %d seconds (7 days); renew it to keep it longer", int(MaxResourceLockTTL/time.Second))
	}
	return ttl, nil
}

func (e *engine) RenewResource(ctx context.Context, id, client string, ttl time.Duration) (ResourceLock, error) {
	if id == "" {
		return ResourceLock{}, InvalidArgument("lock id is empty")
	}
	if err := validClient(client); err != nil {
		return ResourceLock{}, err
	}
	ttl, err := resourceTTL(ttl)
	if err != nil {
		return ResourceLock{}, err
	}
	now := e.clock.Now()
	return e.b.RenewResourceLock(ctx, id, client, now.Add(ttl), now)
}

func (e *engine) UnlockResource(ctx context.Context, id, client string) error {
	if id == "" {
		return InvalidArgument("lock id is empty")
	}
	return e.b.DropResourceLock(ctx, id, client, e.clock.Now())
}

func (e *engine) ResourceLocks(ctx context.Context, f ResourceLockFilter) ([]ResourceLock, error) {
	return e.b.ListResourceLocks(ctx, f, e.clock.Now())
}

func (e *engine) Ping(ctx context.Context) error { return e.b.Ping(ctx) }
func (e *engine) Close() error                   { return e.b.Close() }
