package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// resubmitRow sets an OUTPUT row to RESUBMIT with its attempts counted
// afresh, and queues the chunk for its producer (the job whose OUTPUT rows
// are keyed under the row's job, rowOwner).
func resubmitRow(ctx context.Context, tx backends.Tx, cat *backends.Catalog, old backends.StatusRow, reason string, now time.Time) (backends.StatusRow, error) {
	r := old
	r.Status, r.Attempt, r.Reason, r.UpdatedAt = backends.StatusResubmit, 0, reason, now
	r.LeaseExpiresAt, r.PrevStatus, r.Ended, r.RetryAt = time.Time{}, backends.StatusNone, "", time.Time{}
	if err := putByOperator(ctx, tx, &old, r); err != nil {
		return r, err
	}
	if r.Job == "" {
		return r, nil
	}
	job := r.Job
	if j, ok := cat.RowOwner(r.Dataset, r.Job); ok {
		job = j.ID
	}
	return r, tx.AddCandidate(ctx, backends.Candidate{Job: job, DataID: r.DataID, Resubmit: true})
}

// invalidateDownstream invalidates, transitively, what the consumers of
// chunk (dataset, dataid) computed from it or failed on, as CascadeStepOf
// plans for each read of it: the INPUT rows of those reads become ERROR
// and the OUTPUT rows they were read for RESUBMIT, all stamped now, the
// time of the operation that cascades. A consumer reading the dataset
// through a mapping (SPEC §9) may have read the chunk for several output
// dataids (a lookback, a roll-up): each of those outputs is invalidated,
// and the walk goes on from each. It returns the OUTPUT rows it changed, or
// LOCKED, listing every consumer that reads or writes, right now, a chunk
// the walk reaches; the caller then rolls back. The caller holds the
// chunk locks of every chunk the walk writes (lockCascade).
func invalidateDownstream(ctx context.Context, tx backends.Tx, cat *backends.Catalog, dataset, dataid, reason string, now time.Time) ([]backends.StatusRow, error) {
	w := cascadeWalk{cat: cat, write: true, reason: reason, now: now}
	if err := w.run(ctx, tx, backends.Read{Dataset: dataset, DataID: dataid}); err != nil {
		return nil, err
	}
	if len(w.blockers) > 0 {
		return nil, backends.Locked(w.blockers, "cannot invalidate what was computed from %s/%s while downstream claims are live: %s", dataset, dataid, backends.DescribeBlockers(w.blockers))
	}
	return w.changed, nil
}

// cascadeWalk walks what was computed from a chunk, writing the
// invalidation (write) or only finding the chunks it would write
// (reached), for lockCascade.
type cascadeWalk struct {
	cat      *backends.Catalog
	write    bool
	reason   string
	now      time.Time
	changed  []backends.StatusRow
	blockers []backends.Blocker
	reached  []backends.Read // the output chunks the walk writes or is blocked on
}

// chunkRead is one consumer's read of a chunk: its INPUT row (nil: none)
// under key, and the OUTPUT row (nil: none) of the output dataid it was
// read for.
type chunkRead struct {
	job   backends.Job
	key   backends.RowKey
	in    *backends.StatusRow
	outID string
	out   *backends.StatusRow
}

// readsOf lists the reads of chunk c by its consumers: for each, its INPUT
// row for the output of the same dataid and, for a consumer reading c's
// dataset through a mapping, its reads of c for other output dataids.
func (w *cascadeWalk) readsOf(ctx context.Context, tx backends.Tx, c backends.Read) ([]chunkRead, error) {
	consumers := w.cat.Consumers(c.Dataset)
	keys := make([]backends.RowKey, 0, 2*len(consumers))
	for _, jid := range consumers {
		keys = append(keys, backends.RowKey{Dataset: c.Dataset, DataID: c.DataID, Job: jid, Role: backends.RoleInput}, outputKey(w.cat, w.cat.Jobs.Get(jid), c.DataID))
	}
	rows, err := tx.GetRows(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]chunkRead, 0, len(consumers))
	var mapped []chunkRead
	for i, jid := range consumers {
		job := w.cat.Jobs.Get(jid)
		out = append(out, chunkRead{job: job, key: keys[2*i], in: rows[2*i], outID: c.DataID, out: rows[2*i+1]})
		if k := job.Mapping(c.Dataset).Kind; k == partition.Identity || k == "" {
			continue
		}
		reads, err := tx.ListReads(ctx, c.Dataset, c.DataID, jid)
		if err != nil {
			return nil, err
		}
		for _, r := range reads {
			mapped = append(mapped, chunkRead{job: job, key: r.RowKey, in: &r, outID: r.ReadFor})
		}
	}
	if len(mapped) == 0 {
		return out, nil
	}
	keys = keys[:0]
	for _, m := range mapped {
		keys = append(keys, outputKey(w.cat, m.job, m.outID))
	}
	if rows, err = tx.GetRows(ctx, keys); err != nil {
		return nil, err
	}
	for i := range mapped {
		mapped[i].out = rows[i]
	}
	return append(out, mapped...), nil
}

// run walks from chunk root.
func (w *cascadeWalk) run(ctx context.Context, tx backends.Tx, root backends.Read) error {
	queue := []backends.Read{root}
	seen := map[backends.Read]bool{root: true}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		reads, err := w.readsOf(ctx, tx, c)
		if err != nil {
			return err
		}
		for _, r := range reads {
			step := backends.CascadeStepOf(r.in, r.out)
			next := backends.Read{Dataset: r.job.Output, DataID: r.outID}
			switch step {
			case backends.CascadeSkip:
				continue
			case backends.CascadeBlocked:
				w.reached = append(w.reached, next)
				if backends.StatusOf(r.in) == backends.StatusRunning {
					w.blockers = append(w.blockers, backends.Blocker{Dataset: c.Dataset, DataID: c.DataID, Job: r.job.ID, Kind: backends.BlockerLocalRead, Status: backends.StatusRunning})
				} else {
					w.blockers = append(w.blockers, backends.Blocker{Dataset: r.job.Output, DataID: r.outID, Job: r.job.ID, Kind: backends.BlockerOutputLocked, Status: backends.StatusRunning})
				}
				continue
			case backends.CascadeInvalidate:
				if w.write {
					in := *r.in
					in.Status, in.Reason, in.UpdatedAt = backends.StatusError, w.reason, w.now
					if err := putByOperator(ctx, tx, r.in, in); err != nil {
						return err
					}
				}
			}
			// A job reading two invalidated chunks (a diamond, or a window
			// holding both) is reached twice: its output is resubmitted,
			// and walked, only once.
			if seen[next] {
				continue
			}
			seen[next] = true
			w.reached = append(w.reached, next)
			queue = append(queue, next)
			if w.write && r.out != nil && backends.ResubmitFrom(r.out.Status) {
				row, err := resubmitRow(ctx, tx, w.cat, *r.out, w.reason, w.now)
				if err != nil {
					return err
				}
				w.changed = append(w.changed, row)
			}
		}
	}
	return nil
}

// mappedDownstream tells whether a job reads, through a mapping other than
// IDENTITY, dataset or a dataset computed from it: an invalidation of one
// of its chunks may then reach other dataids.
func mappedDownstream(cat *backends.Catalog, dataset string) bool {
	for _, d := range cat.Downstream(dataset) {
		for _, jid := range cat.Consumers(d) {
			if k := cat.Jobs.Get(jid).Mapping(d).Kind; k != partition.Identity && k != "" {
				return true
			}
		}
	}
	return false
}

// errReplan asks for an operation to run again in a new transaction that
// locks other chunks first: an invalidation whose walk found, once its
// locks were held, chunks outside them (reads made in between; chunks
// lists them), or a chunk becoming READY whose nearest chunks not READY
// changed before their locks were granted (mapwindows.go). what says
// which, for the error of an operation that keeps replanning.
type errReplan struct {
	chunks []backends.Read
	what   string
}

func (e *errReplan) Error() string {
	return "backends: " + e.message() + " (the operation runs again)"
}

func (e *errReplan) message() string {
	if e.what == "" {
		return "an invalidation kept reaching more chunks than it locked while claims went on"
	}
	return e.what
}

// maxReplans bounds how many times an invalidation runs again because
// concurrent claims keep adding reads of the chunks it walks.
const maxReplans = 8

// lockCascade locks, for an operation that invalidates what was computed
// from chunk (dataset, dataid), every chunk the invalidation may write,
// together with the chunks in plan: exclusively the dataset's downstream
// datasets at dataid (all that an invalidation writes without mappings)
// and, when mappings are downstream, the output chunks the walk reaches
// (found by walking without locks, then checked again with them held)
// and those of hint. With more chunks to lock than it took, it answers
// errReplan: the caller runs the operation again with them as hint.
func lockCascade(ctx context.Context, tx backends.Tx, cat *backends.Catalog, dataset, dataid string, plan lockPlan, hint []backends.Read) error {
	for _, d := range cat.Downstream(dataset) {
		plan.add(dataid, d, true)
	}
	if !mappedDownstream(cat, dataset) {
		return plan.lock(ctx, tx)
	}
	root := backends.Read{Dataset: dataset, DataID: dataid}
	find := cascadeWalk{cat: cat}
	if err := find.run(ctx, tx, root); err != nil {
		return err
	}
	for _, c := range append(find.reached, hint...) {
		plan.add(c.DataID, c.Dataset, true)
	}
	if err := plan.lock(ctx, tx); err != nil {
		return err
	}
	check := cascadeWalk{cat: cat}
	if err := check.run(ctx, tx, root); err != nil {
		return err
	}
	var missing []backends.Read
	for _, c := range check.reached {
		if s := plan[c.DataID]; s == nil || !slices.Contains(s.exclusive, c.Dataset) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return &errReplan{chunks: append(append(missing, find.reached...), hint...)}
	}
	return nil
}

// withReplans runs op, a transaction that calls lockCascade with hint or
// makes chunks READY (lockReady, windowLocks), again while it answers
// errReplan, with the wider hint.
func withReplans(op func(hint []backends.Read) error) error {
	var hint []backends.Read
	var re *errReplan
	for range maxReplans {
		err := op(hint)
		if !errors.As(err, &re) {
			return err
		}
		hint = re.chunks
	}
	return backends.Unavailable(nil, "%s; retry", re.message())
}
