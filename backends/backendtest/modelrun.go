package backendtest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The model-based test: random operation sequences applied to the store
// and to the reference model (model.go), compared after every step: error
// codes, blockers, claimed dataid, attempt and lease, every status row,
// the live claims, one chunk's rows and locks, and one job's blockers.

// Environment variables that steer the model test.
const (
	// EnvModelSeed replays the one sequence with that seed.
	EnvModelSeed = "CHUNKLOCK_MODEL_SEED"
	// EnvModelSequences runs that many sequences (seeds 1..n).
	EnvModelSequences = "CHUNKLOCK_MODEL_SEQUENCES"
	// EnvModelSteps sets the number of operations per sequence.
	EnvModelSteps = "CHUNKLOCK_MODEL_STEPS"
)

// The model pipeline: two sources, a chain src → ja → a → jb → b, a
// two-input job jm reading a and src2, jn with no inputs, js with no
// inputs, scheduled by the hourly definition of its output s, and jw
// reading src one to one and every chunk of src2 (an ALL mapping, SPEC §9)
// for each of its outputs, and the daily pipeline of modelmappings.go:
// jr reading a 3-day lookback of d and the LATEST snapshot of dim, jk
// rolling the days of d up into ISO weeks. ja, jm, js and jk back off
// after a failure.
var (
	modelDatasets = []string{"src", "src2", "a", "b", "m", "n", "s", "w", "d", "dim", "r", "o", "wk", modelDynamic, "t", "u", "v", modelX, modelZ, modelQ, "l", modelF, modelG, modelE, modelP}
	modelSources  = []string{"src", "src2", "d", "dim"}
	modelDataIDs  = []string{"1", "2", "10"}
	// modelPartitions: src2 expects dataids 1 and 2 only (SPEC §8), so
	// publishing src2/10 is refused; w expects the model's dataids (a
	// STATIC set: its jw is scheduled by the chunks of src2 it reads all
	// of, whose reverse mapping lists w's expected dataids).
	modelPartitions = map[string]partition.Def{
		"src2": {Kind: partition.Integer, Start: "1", End: "2"},
		"w":    {Kind: partition.Static, Values: []string{"1", "2", "10"}},
		"d":    modelDailyD, "dim": modelDailyDim, "r": modelDailyR, "o": modelDailyR, "wk": modelWeeklyWk,
		modelDynamic: modelDynamicDef, "t": modelDimsDef, "u": modelDimsDef, "v": modelScheduleDef,
		modelX: modelXDef, modelZ: modelXDef, modelQ: modelScheduleDef, "l": modelDimsDef,
		modelF: modelXDef, modelG: modelScheduleDef, modelE: modelXDef, modelP: modelPDef,
	}
	modelExpected = map[string][]string{"src2": {"1", "2"}, "w": {"1", "2", "10"},
		"d": modelDaysD, "dim": modelDaysDim, "r": modelDaysR, "o": modelDaysR, "wk": modelWeeks, "t": modelDimsIDs, "u": modelDimsIDs, "v": modelScheduleIDs,
		modelX: {}, modelZ: {}, modelQ: modelScheduleIDs, "l": modelDimsIDs, modelF: {}, modelG: modelScheduleIDs, modelE: {}, modelP: modelPIDs}
)

// modelPool is the pool ja and jm share; it starts with 2 slots.
const modelPool = "mp"

func modelJobs() []*mJob {
	return append([]*mJob{
		{id: "ja", inputs: []string{"src"}, output: "a", maxAttempts: 2, lease: 30 * time.Second,
			retryDelay: 20 * time.Second, retryMax: 50 * time.Second, pool: modelPool},
		{id: "jb", inputs: []string{"a"}, output: "b", maxAttempts: 3, lease: 60 * time.Second, maxConcurrent: 1},
		{id: "jm", inputs: []string{"a", "src2"}, output: "m", maxAttempts: 2, lease: 45 * time.Second,
			retryDelay: 10 * time.Second, retryMax: 15 * time.Second, pool: modelPool},
		{id: "jn", output: "n", maxAttempts: 2, lease: 30 * time.Second},
		{id: "js", output: "s", maxAttempts: 3, lease: 30 * time.Second, retryDelay: 30 * time.Second,
			retryMax: time.Hour, def: &modelScheduleDef, ids: modelScheduleIDs},
		{id: "jw", inputs: []string{"src", "src2"}, output: "w", maxAttempts: 2, lease: 30 * time.Second,
			mapped: map[string]partition.Mapping{"src2": {Kind: partition.All}}},
		{id: "jt", output: "t", maxAttempts: 2, lease: 30 * time.Second, def: &modelDimsDef, ids: modelDimsIDs},
		{id: "ju", inputs: []string{"t"}, output: "u", maxAttempts: 2, lease: 45 * time.Second, def: &modelDimsDef, ids: modelDimsIDs},
		// jv rolls t's regions up into v, hourly: each hour reads its two
		// regions (SPEC §10's rules; no mapping is declared).
		{id: "jv", inputs: []string{"t"}, output: "v", maxAttempts: 2, lease: 30 * time.Second, def: &modelScheduleDef, ids: modelScheduleIDs,
			mapped: map[string]partition.Mapping{"t": {Kind: partition.AcrossDimensions}}},
		// jl reads t into l by dimension: each hour and region reads its
		// region's hour and the hour before (SPEC §10, an entry naming
		// the hour dimensions; the region read by value).
		{id: "jl", inputs: []string{"t"}, output: "l", maxAttempts: 2, lease: 30 * time.Second, def: &modelDimsDef, ids: modelDimsIDs,
			mapped: map[string]partition.Mapping{"t": {Kind: partition.TimeWindow, StartOffset: -1, Dimension: "hour", OutputDimension: "hour"}}},
	}, append(append(mappedJobs(), dynamicJob()), dimsDynamicJobs()...)...)
}

// storeJob is the job the store is given for the model's job j.
func storeJob(j *mJob) backends.Job {
	bj := backends.Job{ID: j.id, Inputs: j.inputs, Output: j.output, MaxAttempts: j.maxAttempts,
		LeaseSeconds: int(j.lease / time.Second), Paused: j.paused,
		RetryDelaySeconds: int(j.retryDelay / time.Second), RetryMaxDelaySeconds: int(j.retryMax / time.Second),
		MaxConcurrent: j.maxConcurrent, Pool: j.pool, Env: j.env}
	bj.InputMappings = storeMappings(j)
	return bj
}

func (s *suite) testModel(t *testing.T) {
	steps := s.cfg.modelSteps
	if v := os.Getenv(EnvModelSteps); v != "" {
		var err error
		if steps, err = strconv.Atoi(v); err != nil || steps < 1 {
			t.Fatalf("%s=%q is not a count: want a positive integer", EnvModelSteps, v)
		}
	}
	var seeds []uint64
	if v := os.Getenv(EnvModelSeed); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q is not a seed: want a non-negative integer", EnvModelSeed, v)
		}
		seeds = append(seeds, seed)
	} else {
		n := s.cfg.modelSequences
		if v := os.Getenv(EnvModelSequences); v != "" {
			var err error
			if n, err = strconv.Atoi(v); err != nil || n < 1 {
				t.Fatalf("%s=%q is not a count: want a positive integer", EnvModelSequences, v)
			}
		}
		for i := 1; i <= n; i++ {
			seeds = append(seeds, uint64(i))
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { s.runSequence(t, seed, steps) })
	}
}

// issued is a token the store handed out and the model's claim it stands for.
type issued struct {
	token string
	claim mClaim
}

type harness struct {
	t       *testing.T
	b       *bundle
	m       *model
	rng     *rand.Rand
	seed    uint64
	step    int
	log     []string
	tokens  []issued
	fences  map[string]int64 // output chunk -> last fence seen
	last    op               // the operation before, for locality
	changes int              // the store's catalog changes (modelchanges.go)
}

func (s *suite) runSequence(t *testing.T, seed uint64, steps int) {
	b := s.setup(t)
	h := &harness{t: t, b: b, rng: rand.New(rand.NewPCG(seed, 0x636c6b)), seed: seed, fences: map[string]int64{}}
	b.datasets(modelDatasets...)
	b.partitioned("s", modelScheduleDef)
	if _, err := b.s.UpsertPool(b.ctx, backends.Pool{ID: modelPool, Slots: 2}); err != nil {
		t.Fatalf("upsert pool: %v", err)
	}
	for id, def := range modelPartitions {
		b.definedDataset(id, def) // before the jobs: an ALL mapping needs its input's definition
	}
	jobs := modelJobs()
	for _, j := range jobs {
		b.upsertJob(storeJob(j))
	}
	h.m = newModel(modelDatasets, jobs, modelDataIDs, b.clock.Now())
	h.m.pools[modelPool] = 2
	h.m.expected = maps.Clone(modelExpected)
	h.m.expected[modelDynamic] = []string{} // the set starts empty
	h.setRetention()
	h.changes = h.countChanges()
	for h.step = 1; h.step <= steps; h.step++ {
		h.apply(h.randomOp())
		h.compareAll()
	}
}

// fatalf stops the sequence with everything needed to replay it.
func (h *harness) fatalf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("model test, seed %d, step %d: %s\nreplay with %s=%d %s=%d\noperations:\n  %s",
		h.seed, h.step, fmt.Sprintf(format, args...), EnvModelSeed, h.seed, EnvModelSteps, h.step, strings.Join(h.log, "\n  "))
}

func (h *harness) equal(what string, want, got any) {
	h.t.Helper()
	if !reflect.DeepEqual(want, got) {
		h.fatalf("%s differs\n  model: %v\n  store: %v", what, want, got)
	}
}

func (h *harness) code(what string, want backends.Code, err error) {
	h.t.Helper()
	if got := backends.CodeOf(err); got != want {
		h.fatalf("%s: model says %q, store says %q (%v)", what, want, got, err)
	}
}

const modelExecutor = "model-runner"

func (h *harness) apply(o op) {
	h.t.Helper()
	h.log = append(h.log, fmt.Sprintf("%2d %s", h.step, o))
	b, m, ctx := h.b, h.m, h.b.ctx
	switch o.kind {
	case "publish":
		_, err := b.s.Publish(ctx, o.dataset, o.dataid)
		h.code("publish", m.publish(o.dataset, o.dataid), err)
	case "hold":
		_, err := b.s.Hold(ctx, o.dataset, o.dataid, "model")
		h.code("hold", m.hold(o.dataset, o.dataid), err)
	case "resubmit":
		h.applyResubmit(o)
	case "resubmitRange", "holdRange", "publishRange":
		h.applyRange(o)
	case "findNext":
		c, err := b.s.FindNext(ctx, o.job, modelExecutor)
		want := m.findNext(o.job)
		h.code("findNext", "", err)
		if (want == nil) != (c == nil) {
			h.fatalf("findNext(%s): model claims %v, store claims %v", o.job, describeM(want), describeC(c))
		}
		if want != nil {
			h.claimed(*want, c)
		}
	case "claim", "force":
		h.applyClaim(o)
	case "blockers":
		bs, err := b.s.Blockers(ctx, o.job, o.dataid)
		j := m.job(o.job)
		if !m.jobExpects(j, o.dataid) {
			h.code("blockers", backends.CodeInvalidArgument, err)
			return
		}
		h.code("blockers", "", err)
		h.equal("blockers", m.allBlockers(j, o.dataid), normBlockers(bs))
	case "heartbeat", "complete", "fail", "release":
		h.applyLive(o)
	case "claimNext":
		h.applyClaimNext(o)
	case "completeMany", "failMany", "heartbeatMany":
		h.applyMany(o)
	case "env", "envAllow":
		h.applyEnv(o)
	case "advance", "expire":
		if o.kind == "advance" {
			b.clock.Advance(o.advance)
			m.now = b.clock.Now()
			if !o.expire {
				return
			}
		}
		n, err := b.s.ExpireLeases(ctx)
		h.code("expireLeases", "", err)
		h.equal("claims expired", m.expire(), n)
	case "partitions":
		h.applyPartitions(o.dataset)
		h.checkRuns(o.dataset)
	case "pause", "limit":
		if o.kind == "pause" && o.direct {
			h.applyPause(o)
			return
		}
		j := *m.job(o.job)
		if o.kind == "pause" {
			j.paused = o.paused
		} else {
			j.maxConcurrent = o.limit
		}
		h.upsertModelJob(fmt.Sprintf("upsertJob(%s)", o.job), j)
	case "widen":
		h.applyWiden(o)
	case "deleteDataset":
		h.applyDeleteDataset(o)
	case "redeclare":
		h.applyRedeclare(o)
	case "own":
		h.applyOwn(o)
	case "prune":
		h.applyPrune(o)
	case "addPartitions", "removePartitions":
		h.applyValues(o)
	case "addDimension", "removeDimension":
		h.applyMembers(o)
	case "addFed":
		h.applyFedAdd(o)
	case "slots":
		_, err := b.s.UpsertPool(ctx, backends.Pool{ID: modelPool, Slots: o.limit})
		h.code("upsertPool", "", err)
		h.poolChange(o.limit)
		m.pools[modelPool] = o.limit
	default:
		h.fatalf("unknown operation %q", o.kind)
	}
}

func (h *harness) applyResubmit(o op) {
	h.t.Helper()
	rows, err := h.b.s.Resubmit(h.b.ctx, o.dataset, o.dataid, o.cascade)
	want, code := h.m.resubmit(o.dataset, o.dataid, o.cascade)
	h.code("resubmit", code, err)
	if code == "" {
		var got []string
		for _, r := range rows {
			got = append(got, r.Dataset)
		}
		slices.Sort(got)
		slices.Sort(want)
		h.equal("datasets set to RESUBMIT", want, got)
	}
}

// applyClaim applies a claim or a force.
func (h *harness) applyClaim(o op) {
	h.t.Helper()
	var c *backends.Claim
	var err error
	if o.kind == "claim" {
		c, err = h.b.s.Claim(h.b.ctx, o.job, o.dataid, modelExecutor)
	} else {
		c, err = h.b.s.Force(h.b.ctx, o.job, o.dataid, modelExecutor)
	}
	want, code, bs := h.m.claim(o.job, o.dataid, o.kind == "force")
	h.code(o.kind, code, err)
	if code == backends.CodeLocked {
		h.equal("blockers", normBlockers(bs), normBlockers(blockersOf(err)))
	}
	if want != nil {
		h.claimed(*want, c)
	}
}

// applyLive applies an operation on a claim: heartbeat, complete, fail or
// release, with a token the store issued or a garbage one.
func (h *harness) applyLive(o op) {
	h.t.Helper()
	b, m, ctx := h.b, h.m, h.b.ctx
	tok, claim := "ct1.garbage", mClaim{id: -1, job: "ja", dataid: "1"}
	if o.tok >= 0 {
		tok, claim = h.tokens[o.tok].token, h.tokens[o.tok].claim
	}
	var err error
	var want backends.Code
	switch o.kind {
	case "heartbeat":
		var c *backends.Claim
		c, err = b.s.Heartbeat(ctx, tok)
		var lease time.Time
		lease, want = m.heartbeat(claim)
		if want == "" && err == nil {
			h.equal("lease after heartbeat", lease, c.LeaseExpiresAt.UTC())
		}
	case "complete":
		err, want = b.s.Complete(ctx, tok), m.end(claim, endComplete)
	case "fail":
		err, want = b.s.Fail(ctx, tok, "model failure"), m.end(claim, endFail)
	case "release":
		err, want = b.s.Release(ctx, tok), m.end(claim, endRelease)
	}
	h.code(o.kind, want, err)
}

func describeM(c *mClaim) string {
	if c == nil {
		return "nothing"
	}
	return fmt.Sprintf("%s at %s (attempt %d)", c.job, c.dataid, c.attempt)
}

func describeC(c *backends.Claim) string {
	if c == nil {
		return "nothing"
	}
	return fmt.Sprintf("%s at %s (attempt %d)", c.Job, c.DataID, c.Attempt)
}

// claimed compares a claim the store handed out with the model's, checks
// that its fence beats every earlier fence on the chunk, and remembers it.
func (h *harness) claimed(want mClaim, c *backends.Claim) {
	h.t.Helper()
	if c == nil {
		h.fatalf("the model claimed %s, the store returned no claim", describeM(&want))
	}
	j := h.m.job(want.job)
	h.equal("claim", describeM(&want), describeC(c))
	h.equal("claim lease", want.lease, c.LeaseExpiresAt.UTC())
	h.equal("claim executor", modelExecutor, c.Executor)
	h.equal("claim output", j.output, c.Output)
	h.equal("claim env", envNames(j.env), envNames(c.Env))
	chunk := j.output + "/" + c.DataID
	if last, ok := h.fences[chunk]; ok && c.Fence <= last {
		h.fatalf("fence %d on %s does not beat the previous fence %d", c.Fence, chunk, last)
	}
	h.fences[chunk] = c.Fence
	h.tokens = append(h.tokens, issued{token: c.Token, claim: want})
}

// rowView is what the model test compares of a row.
type rowView struct {
	Status  backends.Status
	Attempt int       // OUTPUT rows only: INPUT attempts are not specified
	Lease   time.Time // RUNNING OUTPUT rows only
	RetryAt time.Time // OUTPUT rows only
}

func (h *harness) compareAll() {
	h.t.Helper()
	b, m := h.b, h.m
	want := map[string]rowView{}
	for k, r := range m.rows {
		v := rowView{Status: r.status}
		if k.role == backends.RoleOutput {
			v.Attempt, v.RetryAt = r.attempt, r.retryAt
			if r.status == running {
				v.Lease = r.lease
			}
		}
		want[fmt.Sprintf("%s/%s %s %s %s", k.dataset, k.dataid, k.role, k.job, k.readFor)] = v
	}
	got := map[string]rowView{}
	for _, r := range listRows(h.t, b, backends.ChunkFilter{First: backends.MaxPageSize}) {
		v := rowView{Status: r.Status}
		if r.Role == backends.RoleOutput {
			v.Attempt, v.RetryAt = r.Attempt, r.RetryAt
			if !v.RetryAt.IsZero() {
				v.RetryAt = v.RetryAt.UTC()
			}
			if r.Status == running {
				v.Lease = r.LeaseExpiresAt.UTC()
			}
		}
		got[fmt.Sprintf("%s/%s %s %s %s", r.Dataset, r.DataID, r.Role, r.Job, r.ReadFor)] = v
	}
	if !reflect.DeepEqual(want, got) {
		h.fatalf("status rows differ:\n%s", diffRows(want, got))
	}
	h.compareChunkCounts()

	// Live claims: every RUNNING OUTPUT row whose lease has not passed.
	var wantClaims, gotClaims []string
	for k, r := range m.rows {
		if k.role == backends.RoleOutput && r.status == running && m.now.Before(r.lease) {
			wantClaims = append(wantClaims, m.job(k.job).id+"@"+k.dataid) // the claim names its job, whatever its rows' key
		}
	}
	claims, err := b.s.Claims(b.ctx, "")
	h.code("claims", "", err)
	for _, c := range claims {
		gotClaims = append(gotClaims, c.Job+"@"+c.DataID)
	}
	slices.Sort(wantClaims)
	slices.Sort(gotClaims)
	h.equal("claims", wantClaims, gotClaims)

	// One chunk in detail, rotating through the datasets.
	ds := modelDatasets[h.step%len(modelDatasets)]
	ids := modelDataIDs
	if t, ok := modelTimeIDs[ds]; ok {
		ids = t
	}
	d := ids[(h.step/len(modelDatasets))%len(ids)]
	detail, err := b.s.Chunk(b.ctx, ds, d)
	h.code("chunk", "", err)
	outStatus := m.status(m.outKey(ds, d))
	if (detail.Output == nil) != (outStatus == none) {
		h.fatalf("chunk %s/%s: model OUTPUT status %q, store OUTPUT row %+v", ds, d, outStatus, detail.Output)
	}
	var wantRows, gotRows []string
	for k, r := range m.rows {
		if k.dataset == ds && k.dataid == d {
			wantRows = append(wantRows, fmt.Sprintf("%s %s %s %s", k.role, k.job, k.readFor, r.status))
		}
	}
	for _, r := range detail.Rows {
		gotRows = append(gotRows, fmt.Sprintf("%s %s %s %s", r.Role, r.Job, r.ReadFor, r.Status))
	}
	slices.Sort(wantRows)
	slices.Sort(gotRows)
	h.equal("rows of chunk "+ds+"/"+d, wantRows, gotRows)
	wantLocks, gotLocks := m.chunkLocks(ds, d), toLocks(detail.Locks)
	sortLocks(wantLocks)
	sortLocks(gotLocks)
	h.equal("locks of chunk "+ds+"/"+d, wantLocks, gotLocks)
}

func sortLocks(ls []lk) {
	slices.SortFunc(ls, func(a, b lk) int {
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
}

func diffRows(want, got map[string]rowView) string {
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var sb strings.Builder
	for _, k := range keys {
		w, wok := want[k]
		g, gok := got[k]
		switch {
		case !gok:
			fmt.Fprintf(&sb, "  %-22s model %+v, store has no row\n", k, w)
		case !wok:
			fmt.Fprintf(&sb, "  %-22s model has no row, store %+v\n", k, g)
		case w != g:
			fmt.Fprintf(&sb, "  %-22s model %+v, store %+v\n", k, w, g)
		}
	}
	return sb.String()
}
