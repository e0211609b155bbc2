package backendtest

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// This file is the reference model of the model-based test: a second,
// deliberately plain reading of SPEC §2 and §3, written from the
// specification and not from the engine. It keeps every status row in a map,
// answers each operation by scanning a small, fixed universe of dataids, and
// never tries to be fast. Where SPEC leaves a choice open, the comment at
// the operation says which one the suite takes.

type mJob struct {
	id          string
	inputs      []string
	output      string
	maxAttempts int
	lease       time.Duration
	paused      bool
	// retryDelay and retryMax are the backoff (zero: none); def the
	// output's definition and ids its expected dataids (modeltime.go).
	retryDelay, retryMax time.Duration
	def                  *partition.Def
	ids                  []string
	// maxConcurrent bounds the job's live claims (0: none); pool names the
	// pool whose slots it shares ("": none).
	maxConcurrent int
	pool          string
	// mapped holds the mappings of the inputs not read one to one (SPEC
	// §9): through ALL an output dataid reads every expected dataid of the
	// input, through TIME_WINDOW and LATEST what modelmappings.go works
	// out. The model reads only the kind and offsets from it.
	mapped map[string]partition.Mapping
	// env is the job's env (modelenv.go).
	env []backends.EnvVar
	// dynamic: def is DYNAMIC, its values m.values (modeldynamic.go).
	dynamic bool
	// rowID is the id the job's OUTPUT rows are keyed under once a job
	// producing its output was deleted (Dataset.OutputKey: the id of the
	// first one deleted); "" for id. former lists the ids the job had
	// before a redeclare under another id (modellifecycle.go): the model
	// still finds it by them, as the store finds the chunks' producer by
	// the key of their rows.
	rowID  string
	former []string
}

// rowJob is the id j's OUTPUT rows are keyed under.
func (j *mJob) rowJob() string {
	if j.rowID != "" {
		return j.rowID
	}
	return j.id
}

// mKey is a row's key; readFor is, on an INPUT row, the output dataid the
// chunk was read for when that is not the chunk's own dataid (a mapped
// read), "" otherwise.
type mKey struct {
	dataset, dataid, job string
	role                 backends.Role
	readFor              string
}

// mRead is one input chunk a claim reads.
type mRead struct{ dataset, dataid string }

// reads is what j reads for output dataid now: each input's chunk of the
// same dataid, or, for a mapped input, its mapped set: every expected
// dataid of it (ALL), the window (TIME_WINDOW), the newest READY snapshot
// (LATEST). A claim records its reads: what it ends are those.
func (m *model) reads(j *mJob, dataid string) []mRead {
	var out []mRead
	for _, in := range j.inputs {
		mp, ok := j.mapped[in]
		switch {
		case !ok:
			out = append(out, mRead{in, dataid})
		case mp.Kind == partition.Latest: // named or not (jp pairs with the hour)
			out = append(out, m.latestReads(j, in, dataid)...)
		case mp.Named():
			out = append(out, m.hourWindowByRegion(mp, in, dataid)...)
		case mp.Kind == partition.All:
			for _, x := range m.expected[in] {
				out = append(out, mRead{in, x})
			}
		case mp.Kind == partition.TimeWindow:
			out = append(out, m.windowReads(j, in, dataid)...)
		case mp.Kind == partition.Latest:
			out = append(out, m.latestReads(j, in, dataid)...)
		case mp.Kind == partition.AcrossDimensions:
			// A roll-up across a dimension the output lacks: every tuple
			// of the input whose first value is the output's dataid.
			for _, x := range m.expected[in] {
				if head, _, _ := strings.Cut(x, "|"); head == dataid {
					out = append(out, mRead{in, x})
				}
			}
		default:
			panic("model: mapping " + string(mp.Kind))
		}
	}
	return out
}

// readKey is j's INPUT row on r read for output dataid.
func readKey(j *mJob, r mRead, dataid string) mKey {
	k := inKey(r.dataset, r.dataid, j.id)
	if r.dataid != dataid {
		k.readFor = dataid
	}
	return k
}

type mRow struct {
	status  backends.Status
	attempt int
	// claim is the model's id of the claim that wrote the row while RUNNING
	// or ended it; ended says how it ended (none while it runs, and on rows
	// written otherwise: publish, resubmit, hold).
	claim int
	ended ending
	// before is what the row was before the claim (chain) that holds it,
	// none for "no row": release puts it back.
	before backends.Status
	lease  time.Time
	// retryAt is when a FAILED row may be claimed again (zero: at once).
	retryAt time.Time
	// reads are, on a RUNNING OUTPUT row, what its claim reads (a LATEST
	// read is fixed at claim time).
	reads []mRead
}

// mClaim is what the model hands out.
type mClaim struct {
	id      int
	job     string
	dataid  string
	attempt int
	lease   time.Time
}

type model struct {
	datasets []string
	jobs     []*mJob // sorted by id
	dataids  []string
	rows     map[mKey]*mRow
	claims   int
	now      time.Time
	pools    map[string]int // pool -> slots
	// expected holds the expected dataids of the datasets with a
	// partition definition (SPEC §8), sorted.
	expected map[string][]string
	// envAllowed: the operator allows modelAllowable (modelenv.go).
	envAllowed bool
	// owners holds the pipeline owning each job ("job ID") and the pool
	// ("pool ID") that has one (modellifecycle.go).
	owners map[string]string
	// values is the dynamic set of y, with the time each value was added
	// (modeldynamic.go).
	values map[string]time.Time
	// members are the customers of x (and z), each with the first hour it
	// is expected at (modeldims.go).
	members map[string]string
}

func newModel(datasets []string, jobs []*mJob, dataids []string, now time.Time) *model {
	m := &model{datasets: datasets, jobs: jobs, dataids: slices.Clone(dataids), rows: map[mKey]*mRow{}, now: now, pools: map[string]int{},
		values: map[string]time.Time{}, members: map[string]string{}}
	slices.SortFunc(m.dataids, backends.CompareDataID)
	slices.SortFunc(m.jobs, func(a, b *mJob) int { return cmp.Compare(a.id, b.id) })
	return m
}

func (m *model) job(id string) *mJob {
	for _, j := range m.jobs {
		if j.id == id {
			return j
		}
	}
	for _, j := range m.jobs {
		if slices.Contains(j.former, id) {
			return j
		}
	}
	panic("model: unknown job " + id)
}

// producer is the job writing dataset, "" for a source.
func (m *model) producer(dataset string) string {
	for _, j := range m.jobs {
		if j.output == dataset {
			return j.id
		}
	}
	return ""
}

func (m *model) consumers(dataset string) []*mJob {
	var out []*mJob
	for _, j := range m.jobs {
		if slices.Contains(j.inputs, dataset) {
			out = append(out, j)
		}
	}
	return out
}

// rowJob is the id the OUTPUT rows of dataset are keyed under (its
// producer's rowJob), "" for a source.
func (m *model) rowJob(dataset string) string {
	for _, j := range m.jobs {
		if j.output == dataset {
			return j.rowJob()
		}
	}
	return ""
}

// outKey is the OUTPUT row of chunk (dataset, dataid).
func (m *model) outKey(dataset, dataid string) mKey {
	return mKey{dataset: dataset, dataid: dataid, job: m.rowJob(dataset), role: backends.RoleOutput}
}

func inKey(dataset, dataid, job string) mKey {
	return mKey{dataset: dataset, dataid: dataid, job: job, role: backends.RoleInput}
}

func (m *model) status(k mKey) backends.Status {
	if r := m.rows[k]; r != nil {
		return r.status
	}
	return none
}

// blockers says why job j may not claim dataid (claim and findNext):
// SPEC §3 findNext rule 1 (output RESUBMIT, every input READY) or rule 2
// (output free for producers, every input READY, no job-local lock).
func (m *model) blockers(j *mJob, dataid string) []bk {
	var bs []bk
	out := m.status(m.outKey(j.output, dataid))
	if j.paused {
		bs = append(bs, bk{backends.BlockerPaused, j.output, j.id, out})
	}
	switch out {
	case none, failed, resubmit: // free for producers (§2)
	default:
		bs = append(bs, bk{backends.BlockerOutputLocked, j.output, j.id, out})
	}
	for _, in := range j.inputs {
		if _, ok := j.mapped[in]; ok {
			continue // readBlockers: other dataids than the claim's
		}
		if up := m.status(m.outKey(in, dataid)); up != ready {
			bs = append(bs, bk{backends.BlockerInputNotReady, in, m.rowJob(in), up})
		}
		if out == resubmit {
			continue // rule 1 does not look at job-local locks
		}
		if local := m.status(inKey(in, dataid, j.id)); local == running || local == done {
			bs = append(bs, bk{backends.BlockerLocalRead, in, j.id, local})
		}
	}
	// SPEC §4 guarantee 7: a claim past its lease is not live.
	if j.maxConcurrent > 0 && m.liveClaims(func(o *mJob) bool { return o == j }) >= j.maxConcurrent {
		bs = append(bs, bk{backends.BlockerConcurrency, j.output, j.id, out})
	}
	if j.pool != "" && m.liveClaims(func(o *mJob) bool { return o.pool == j.pool }) >= m.pools[j.pool] {
		bs = append(bs, bk{backends.BlockerConcurrency, j.output, j.id, out})
	}
	return bs
}

// readBlockers are the blockers of j at dataid on the chunks it reads
// through mappings, each naming its own dataid: not READY, or (unless the
// output is RESUBMIT) already read for dataid. A LATEST input without a
// READY snapshot is blocked on its newest candidate.
func (m *model) readBlockers(j *mJob, dataid string) []backends.Blocker {
	var bs []backends.Blocker
	out := m.status(m.outKey(j.output, dataid))
	reads := m.reads(j, dataid)
	for _, in := range j.inputs {
		// Read across dimensions, or by dimension with a DYNAMIC one, an
		// input expecting no tuple for the output (no customer yet at its
		// hour): not due until one is. Read by value (the output has the
		// customer too), a customer the input has reads nothing there
		// (je at a customer's first hour): that is no blocker.
		across := j.mapped[in].Kind == partition.AcrossDimensions || j.mapped[in].Named() && modelHasDynamic(in)
		if _, c, byValue := strings.Cut(dataid, "|"); byValue && j.mapped[in].Named() {
			if _, member := m.members[c]; member {
				across = false
			}
		}
		if across && !slices.ContainsFunc(reads, func(r mRead) bool { return r.dataset == in }) {
			bs = append(bs, backends.Blocker{Dataset: j.output, DataID: dataid, Job: j.id, Kind: backends.BlockerNotDue, Status: out})
		}
	}
	for _, r := range reads {
		if _, ok := j.mapped[r.dataset]; !ok {
			continue
		}
		if up := m.status(m.outKey(r.dataset, r.dataid)); up != ready {
			bs = append(bs, backends.Blocker{Dataset: r.dataset, DataID: r.dataid, Job: m.rowJob(r.dataset), Kind: backends.BlockerInputNotReady, Status: up})
		}
		if out == resubmit {
			continue
		}
		if local := m.status(readKey(j, r, dataid)); local == running || local == done {
			bs = append(bs, backends.Blocker{Dataset: r.dataset, DataID: r.dataid, Job: j.id, Kind: backends.BlockerLocalRead, Status: local})
		}
	}
	return bs
}

// liveClaims counts the live claims (OUTPUT rows RUNNING before their
// lease) of the jobs that match.
func (m *model) liveClaims(match func(*mJob) bool) int {
	n := 0
	for k, r := range m.rows {
		if k.role == backends.RoleOutput && r.status == running && m.now.Before(r.lease) && k.job != "" && match(m.job(k.job)) {
			n++
		}
	}
	return n
}

// take writes a claim: OUTPUT RUNNING with attempt+1 and a lease, INPUT
// rows RUNNING. A claim that supersedes a live one (force) keeps what the
// rows were before the first claim, so that a release restores that, and
// gives back the reads of the live one it does not make (a LATEST
// snapshot that changed in between) as a release does.
func (m *model) take(j *mJob, dataid string) mClaim {
	m.claims++
	id := m.claims
	beforeOf := func(r *mRow) backends.Status {
		switch {
		case r == nil:
			return none
		case r.status == running:
			return r.before
		}
		return r.status
	}
	k := m.outKey(j.output, dataid)
	old := m.rows[k]
	attempt := 1
	if old != nil {
		attempt = old.attempt + 1
	}
	lease := m.now.Add(j.lease)
	reads := m.reads(j, dataid)
	if old != nil && old.status == running {
		for _, r := range old.reads {
			ik := readKey(j, r, dataid)
			if in := m.rows[ik]; !slices.Contains(reads, r) && in != nil && in.status == running && in.claim == old.claim {
				m.restore(ik, in, -1, old.claim, endNone)
			}
		}
	}
	m.rows[k] = &mRow{status: running, attempt: attempt, claim: id, before: beforeOf(old), lease: lease, reads: reads}
	for _, r := range reads {
		ik := readKey(j, r, dataid)
		m.rows[ik] = &mRow{status: running, attempt: attempt, claim: id, before: beforeOf(m.rows[ik])}
	}
	return mClaim{id: id, job: j.id, dataid: dataid, attempt: attempt, lease: lease}
}

// claim is claim(job, dataid) and, with force, force(job, dataid): force
// ignores every blocker, pausing included (it is the operator's override),
// and supersedes a live claim; but it invalidates what downstream jobs
// computed from the output chunk, as resubmit with cascade does, and is
// LOCKED (changing nothing) while any of them reads or writes there.
func (m *model) claim(jobID, dataid string, force bool) (*mClaim, backends.Code, []backends.Blocker) {
	j := m.job(jobID)
	if !m.jobExpects(j, dataid) {
		return nil, backends.CodeInvalidArgument, nil
	}
	if !force {
		if bs := m.allBlockers(j, dataid); len(bs) > 0 {
			return nil, backends.CodeLocked, bs
		}
	}
	if force {
		saved := m.clone()
		if _, bs := m.invalidate(j.output, dataid); len(bs) > 0 {
			m.rows = saved
			return nil, backends.CodeLocked, wantBlockers(dataid, bs)
		}
	}
	c := m.take(j, dataid)
	return &c, "", nil
}

// findNext: a paused job gets nothing; then rule 1 (lowest RESUBMIT dataid
// with READY inputs); then rule 2 (lowest dataid free for producers with
// READY inputs and no job-local lock), a FAILED chunk only from its
// retryAt. A job without inputs gets only FAILED chunks under rule 2,
// new dataids being for claim, unless its output's definition schedules
// it: then it also gets the new expected dataids that are due.
func (m *model) findNext(jobID string) *mClaim {
	j := m.job(jobID)
	if j.paused {
		return nil
	}
	for _, d := range m.universe(j) {
		if m.status(m.outKey(j.output, d)) == resubmit && len(m.allBlockers(j, d)) == 0 {
			c := m.take(j, d)
			return &c
		}
	}
	for _, d := range m.universe(j) {
		out := m.status(m.outKey(j.output, d))
		if out == none && !m.newChunkByFindNext(j, d) {
			continue
		}
		if len(m.allBlockers(j, d)) == 0 {
			c := m.take(j, d)
			return &c
		}
	}
	return nil
}

// live tells whether claim c still holds its chunk: the OUTPUT row is
// RUNNING under this very claim and its lease has not passed.
func (m *model) live(c mClaim) bool {
	r := m.rows[m.outKey(m.job(c.job).output, c.dataid)]
	return r != nil && r.status == running && r.claim == c.id && m.now.Before(r.lease)
}

func (m *model) heartbeat(c mClaim) (time.Time, backends.Code) {
	if !m.live(c) {
		return time.Time{}, backends.CodeStaleClaim
	}
	j := m.job(c.job)
	r := m.rows[m.outKey(j.output, c.dataid)]
	r.lease = m.now.Add(j.lease)
	return r.lease, ""
}

type ending int

const (
	endNone ending = iota
	endComplete
	endFail
	endRelease
	endExpire
)

// end is complete, fail or release. Repeating the very call that ended a
// claim answers as that call did, and changes nothing, while the OUTPUT
// row still records the ending (SPEC §3 "Retries are safe"); a release
// that left no row behind is STALE_CLAIM, like a token never issued.
func (m *model) end(c mClaim, how ending) backends.Code {
	if !m.live(c) {
		r := m.rows[m.outKey(m.job(c.job).output, c.dataid)]
		if r != nil && r.status != running && r.claim == c.id && r.ended == how {
			return ""
		}
		return backends.CodeStaleClaim
	}
	m.finish(m.job(c.job), c.dataid, how)
	return ""
}

// finish ends the claim on job j's output at dataid.
func (m *model) finish(j *mJob, dataid string, how ending) {
	k := m.outKey(j.output, dataid)
	out := m.rows[k]
	id := out.claim
	for _, rd := range out.reads {
		ik := readKey(j, rd, dataid)
		r := m.rows[ik]
		switch how {
		case endComplete:
			*r = mRow{status: done, attempt: r.attempt}
		case endFail, endExpire:
			*r = mRow{status: errored, attempt: r.attempt}
		case endRelease:
			m.restore(ik, r, -1, id, how)
		}
	}
	switch how {
	case endComplete:
		*out = mRow{status: ready, attempt: out.attempt, claim: id, ended: how}
	case endFail, endExpire:
		st := failed
		if out.attempt >= j.maxAttempts {
			st = hold
		}
		*out = mRow{status: st, attempt: out.attempt, claim: id, ended: how}
		if st == failed {
			out.retryAt = modelRetryAt(j, out.attempt, m.now)
		}
	case endRelease:
		m.restore(k, out, -1, id, how) // the attempt is not counted
	}
}

// restore puts row k back to what it was before the claim that holds it
// (none: no row), recording how claim id ended there.
func (m *model) restore(k mKey, r *mRow, attemptDelta int, id int, how ending) {
	if r.before == none {
		delete(m.rows, k)
		return
	}
	*r = mRow{status: r.before, attempt: r.attempt + attemptDelta, claim: id, ended: how}
}

// expire fails every RUNNING claim whose lease has passed.
func (m *model) expire() int {
	n := 0
	for _, k := range slices.Collect(maps.Keys(m.rows)) {
		r := m.rows[k]
		if r == nil || k.role != backends.RoleOutput || r.status != running || m.now.Before(r.lease) {
			continue
		}
		m.finish(m.job(k.job), k.dataid, endExpire)
		n++
	}
	return n
}
