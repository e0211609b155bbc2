package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
)

// A runner pool (Config.Parallel above 1): one runner keeps up to Parallel
// job processes running. It claims for all its free slots in one claimNext
// call, heartbeats all its claims not yet ended in one heartbeatMany call
// (per 1,000 claims) per interval (a third of the shortest lease of its
// jobs), and ends the
// claims of the processes that exited together in one completeMany and one
// failMany call. The endings go in the background: a slot whose process
// exited is claimed for again while its ending is on its way, and the
// processes of a claimNext start at once, not one after the other. A
// process whose claim is lost (STALE_CLAIM, or its lease
// passed without a successful heartbeat) is stopped and nothing is written
// for it. The heartbeats also extend the claims whose process has exited
// and whose ending waits or is on its way, so that a slow ending does not
// let them pass their leases. On a stop signal it claims nothing more,
// releases what it has claimed and not started, and waits for the running
// processes, which it still heartbeats and ends as they exit.

// poolRun is one process of a pool and its claim.
type poolRun struct {
	claim client.Claim
	p     *proc
	lease time.Time
	since time.Time // when the process started
	lost  bool      // the claim is no longer this runner's
	// stopped is set when the pool stops the process of a lost claim (a
	// claim lost after its process exited is not).
	stopped bool
}

type pool struct {
	r        *loop
	opt      Options
	live     map[string]*poolRun // by token: running processes
	exits    chan string         // tokens of processes that exited
	started  int
	draining bool  // claims nothing more
	err      error // what stopped the claiming, returned once the pool is empty

	// exited are the runs whose process exited and whose claim is to be
	// ended, in the order they exited; ending is set while a batch of
	// endings is on its way (sending, its runs), and its outcome comes
	// back on endedC.
	exited  []*poolRun
	ending  bool
	sending []*poolRun
	endedC  chan []endOutcome
}

// endOutcome is how one claim of a batch of endings ended.
type endOutcome struct {
	run     *poolRun
	outcome Outcome
	// unsent says why the ending was not recorded (the outcome is Stale:
	// the lease passes and the server fails the claim), "" when it was.
	unsent string
	// tries is the job's maxAttempts, read after a failure was recorded.
	tries int
}

// servePool is serve for a pool.
func (r *loop) servePool(ctx context.Context) error {
	pl := &pool{r: r, live: map[string]*poolRun{}, exits: make(chan string, r.cfg.Parallel), endedC: make(chan []endOutcome, 1)}
	pl.opt = Options{Command: r.cfg.Command, Dir: r.cfg.Dir, Env: []string{"CHUNKLOCK_URL=" + r.cfg.URL},
		Stdout: r.cfg.Stdout, Stderr: r.cfg.Stderr, KillGrace: r.cfg.KillGrace, Logf: r.logf, EnvAllow: r.cfg.EnvAllow}
	now := time.Now()
	pl.opt.defaults(client.Claim{LeaseExpiresAt: now.Add(r.shortestLease())}, now)
	w := &waiter{r: r, idleWait: r.cfg.IdleWait, wake: make(chan struct{}, 1)}
	defer w.close()
	ticker := time.NewTicker(pl.opt.Heartbeat)
	defer ticker.Stop()
	bg := context.WithoutCancel(ctx) // the pool's own calls outlive a stop signal
	stop := ctx.Done()
	for {
		claimed := 0
		if !pl.draining && ctx.Err() == nil {
			claimed = pl.fill(ctx)
		}
		if len(pl.live) == 0 && !pl.ending {
			switch {
			case pl.draining || ctx.Err() != nil:
				return pl.finish(ctx)
			case claimed > 0:
				continue
			case r.cfg.IdleWait == 0 || !w.wait(ctx):
				pl.draining = true
				continue
			}
			continue
		}
		w.busy()
		select {
		case tok := <-pl.exits:
			pl.exit(tok)
			pl.end(bg)
		case outcomes := <-pl.endedC:
			pl.ending, pl.sending = false, nil
			for _, o := range outcomes {
				pl.r.stats[o.outcome]++
				if o.unsent != "" {
					r.logf("the ending of %s %s was not recorded (%s): counted as lost; once its lease passes the server fails the claim, and the chunk is retried while attempts remain", o.run.claim.Job, o.run.claim.DataID, o.unsent)
					continue
				}
				if o.outcome == Stale && !o.run.stopped {
					r.logf("lost the claim on %s %s before its ending was recorded (expired or forced by an operator): its process had exited, nothing written", o.run.claim.Job, o.run.claim.DataID)
					continue
				}
				pl.r.reportTries(o.outcome, o.run.claim, time.Since(o.run.since).Round(time.Millisecond), o.tries)
			}
			pl.end(bg)
		case <-ticker.C:
			pl.heartbeat(bg)
		case <-stop:
			stop = nil
			pl.draining = true
			r.logf("stopping: claiming nothing more, waiting for %d running job processes", len(pl.live))
		}
	}
}

// shortestLease is the shortest lease of the jobs served.
func (r *loop) shortestLease() time.Duration {
	lease := time.Duration(backends.DefaultLeaseSeconds) * time.Second
	for i, j := range r.jobs {
		if l := r.leases[j]; l > 0 && (i == 0 || l < lease) {
			lease = l
		}
	}
	return lease
}

// finish is what the pool returns once it is empty.
func (pl *pool) finish(ctx context.Context) error {
	switch {
	case ctx.Err() != nil:
		return pl.r.stopped()
	case pl.err != nil:
		return fmt.Errorf("%w (after %s)", pl.err, pl.r.summary())
	case pl.r.cfg.Max > 0 && pl.started >= pl.r.cfg.Max:
		pl.r.logf("reached --max %d: %s", pl.r.cfg.Max, pl.r.summary())
	default:
		pl.r.logf("nothing left to do: %s", pl.r.summary())
	}
	return nil
}

// fill claims for the free slots, one claimNext call per job tried, the
// jobs in turn, and starts a process for each claim; it returns how many
// it claimed. While an ending is on its way, the slots freed meanwhile are
// claimed for again, and their claims wait to end with the next batch;
// but the claims whose process exited and that are not ended yet are at
// most one call's worth (backends.MaxManyTokens): past that the pool
// claims nothing until an ending comes back, rather than let claims pile
// up behind a slow one (each one more to heartbeat until it is ended).
func (pl *pool) fill(ctx context.Context) int {
	r := pl.r
	free := r.cfg.Parallel - len(pl.live)
	if r.cfg.Max > 0 {
		free = min(free, r.cfg.Max-pl.started)
		if free <= 0 {
			pl.draining = true
		}
	}
	free = min(free, r.cfg.Parallel+backends.MaxManyTokens-len(pl.live)-len(pl.exited)-len(pl.sending))
	claimed := 0
	for i := 0; i < len(r.jobs) && free > 0; i++ {
		job := r.jobs[(r.next+i)%len(r.jobs)]
		cs, err := retry(ctx, r.cfg.RetryFor, r.logf, "claiming chunks of "+job, func(ctx context.Context) ([]*client.Claim, error) {
			// A stop does not drop a claimNext on its way: the server may
			// have made the claims, and start gives them back once the
			// answer is here (the client's own timeout bounds the wait).
			return r.clientFor(job).ClaimNext(context.WithoutCancel(ctx), job, r.cfg.Executor, free)
		})
		if err != nil {
			if ctx.Err() == nil {
				pl.err, pl.draining = err, true
			}
			return claimed
		}
		for i, st := range startAll(ctx, cs, pl.opt) {
			pl.start(ctx, *cs[i], st)
		}
		free -= len(cs)
		claimed += len(cs)
		if len(cs) > 0 {
			r.next = (r.next + i + 1) % len(r.jobs)
		}
	}
	return claimed
}

// started is what startAll did for one claim: its process, or why it did
// not start (both nil: the runner is stopping, it was not tried).
type started struct {
	p   *proc
	err error
}

// startAll starts the processes of claims cs at once (each start is a
// fork and exec: one after the other they would keep a whole pool's slots
// waiting), unless the runner is stopping.
func startAll(ctx context.Context, cs []*client.Claim, opt Options) []started {
	out := make([]started, len(cs))
	if ctx.Err() != nil {
		return out
	}
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			err := CheckEnv(*c, opt.EnvAllow)
			var p *proc
			if err == nil {
				p, err = startProc(*c, opt)
			}
			out[i] = started{p, err}
		})
	}
	wg.Wait()
	return out
}

// start takes on claim c and what startAll did for it: a process started
// is run; a claim not tried (the runner is stopping) is released; one
// whose env is refused or whose process could not start is failed.
func (pl *pool) start(ctx context.Context, c client.Claim, st started) {
	r := pl.r
	pl.started++
	if st.p == nil && st.err == nil {
		bg := context.WithoutCancel(ctx)
		if err := (retrying{r}).Release(bg, c.Token); err != nil && client.CodeOf(err) != backends.CodeStaleClaim {
			r.logf("releasing %s %s, not started: %v", c.Job, c.DataID, err)
		}
		r.stats[Released]++
		r.report(Released, c, 0)
		return
	}
	r.logf("claimed %s %s (attempt %d, executor %s)", c.Job, c.DataID, c.Attempt, c.Executor)
	if err := st.err; err != nil {
		outcome, ferr := failUnstarted(ctx, retrying{r}, c, pl.opt, err)
		r.stats[outcome]++
		r.reportTries(outcome, c, 0, r.lastMaxAttempts(c.Job)) // on the loop: no request
		r.logf("%v", ferr)
		if envErr := (*EnvError)(nil); errors.As(err, &envErr) && !r.drop(c.Job) {
			pl.err, pl.draining = fmt.Errorf("runner: no job left to serve: the runner refuses the env of %v", r.cfg.Jobs), true
		}
		return
	}
	p := st.p
	pl.live[c.Token] = &poolRun{claim: c, p: p, lease: c.LeaseExpiresAt, since: time.Now()}
	go func() {
		<-p.done
		pl.exits <- c.Token
	}()
}

// exit moves the run of tok, and of every other process that has exited
// by now, from the live runs to those to end: its slot is free.
func (pl *pool) exit(tok string) {
	for more := true; more; {
		run := pl.live[tok]
		delete(pl.live, tok)
		pl.exited = append(pl.exited, run)
		select {
		case tok = <-pl.exits:
		default:
			more = false
		}
	}
}

// end sends the endings of the runs that exited, unless a batch is on its
// way (they go with the next): completions in one call, failures in
// another, in the background; the outcomes come back on pl.endedC.
func (pl *pool) end(ctx context.Context) {
	if pl.ending || len(pl.exited) == 0 {
		return
	}
	runs := map[string]*poolRun{}
	var outcomes []endOutcome
	var done []string
	var failed []client.FailItem
	batch := pl.exited[:min(len(pl.exited), backends.MaxManyTokens)] // a call's most; the rest go with the next
	for _, run := range batch {
		t := run.claim.Token
		runs[t] = run
		switch {
		case run.lost:
			outcomes = append(outcomes, endOutcome{run: run, outcome: Stale})
		case run.p.err == nil:
			done = append(done, t)
		default:
			failed = append(failed, client.FailItem{Token: t, Reason: cutReason(run.p.reason())})
		}
	}
	pl.exited = pl.exited[len(batch):]
	pl.ending, pl.sending = true, batch
	go func() {
		outcomes = append(outcomes, pl.endBatch(ctx, "completing", Completed, runs, done, func(ctx context.Context) ([]client.TokenResult, error) {
			return pl.r.cfg.Client.CompleteMany(ctx, done)
		})...)
		outcomes = append(outcomes, pl.endBatch(ctx, "failing", Failed, runs, tokensOf(failed), func(ctx context.Context) ([]client.TokenResult, error) {
			return pl.r.cfg.Client.FailMany(ctx, failed)
		})...)
		// What becomes of a failed chunk follows the job's maxAttempts as
		// the server has it now: read once per job of the batch, here.
		tries := map[string]int{}
		for i, o := range outcomes {
			if o.outcome == Failed {
				job := o.run.claim.Job
				if _, ok := tries[job]; !ok {
					tries[job] = pl.r.maxAttempts(job)
				}
				outcomes[i].tries = tries[job]
			}
		}
		pl.endedC <- outcomes
	}()
}

// endBatch sends one batch of endings (none when tokens is empty), retried
// while the server cannot be reached, and says how each token ended. It
// runs beside the pool's loop: it only logs, the loop counts.
func (pl *pool) endBatch(ctx context.Context, what string, outcome Outcome, runs map[string]*poolRun, tokens []string, call func(context.Context) ([]client.TokenResult, error)) []endOutcome {
	if len(tokens) == 0 {
		return nil
	}
	r := pl.r
	res, err := retry(ctx, r.cfg.RetryFor, r.logf, what+" claims", call)
	var unsent string
	if err != nil {
		r.logf("%s %d claim(s): %v", what, len(tokens), r.cfg.Explain(err))
		unsent = "the server refused the call"
		if client.IsTransient(err) {
			unsent = fmt.Sprintf("the server could not be reached for --retry-for %s", r.cfg.RetryFor)
		}
	}
	out := make([]endOutcome, 0, len(tokens))
	for i, t := range tokens {
		run := runs[t]
		got := outcome
		switch {
		case err != nil:
			// Not ended: its lease passes and the server fails it.
			out = append(out, endOutcome{run: run, outcome: Stale, unsent: unsent})
			continue
		case i < len(res) && !res[i].OK && res[i].Code == string(backends.CodeStaleClaim):
			got = Stale
		case i < len(res) && !res[i].OK:
			r.logf("%s %s %s: %s", what, run.claim.Job, run.claim.DataID, res[i].Code)
		}
		out = append(out, endOutcome{run: run, outcome: got})
	}
	return out
}

// heartbeat extends the leases of every claim not ended, in one call per
// 1,000 claims: the live ones, and those whose process exited and whose ending waits or is
// on its way. A live claim answered STALE_CLAIM, or whose lease passed
// without a successful heartbeat, is lost: its process is stopped and
// nothing is written for it. A waiting one answered STALE_CLAIM is lost
// likewise, and its ending not sent; one on its way learns its outcome
// from its ending.
func (pl *pool) heartbeat(ctx context.Context) {
	runs := map[string]*poolRun{}
	waiting := map[string]bool{}
	for t, run := range pl.live {
		if !run.lost {
			runs[t] = run
		}
	}
	for _, run := range pl.exited {
		if !run.lost {
			runs[run.claim.Token], waiting[run.claim.Token] = run, true
		}
	}
	for _, run := range pl.sending {
		if !run.lost {
			runs[run.claim.Token] = run
		}
	}
	if len(runs) == 0 {
		return
	}
	// A call's most each, side by side, under one deadline: the loop
	// waits for them no longer than for one.
	type call struct {
		tokens []string
		res    []client.TokenResult
		err    error
	}
	var calls []*call
	for all := slices.Sorted(maps.Keys(runs)); len(all) > 0; {
		n := min(len(all), backends.MaxManyTokens)
		calls = append(calls, &call{tokens: all[:n]})
		all = all[n:]
	}
	hctx, cancel := context.WithTimeout(ctx, pl.opt.Heartbeat)
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() { c.res, c.err = pl.r.cfg.Client.HeartbeatMany(hctx, c.tokens) })
	}
	wg.Wait()
	cancel()
	for _, c := range calls {
		pl.heartbeatAnswered(c.tokens, c.res, c.err, runs, waiting)
	}
}

// heartbeatAnswered acts on one heartbeatMany answer of heartbeat.
func (pl *pool) heartbeatAnswered(tokens []string, res []client.TokenResult, err error, runs map[string]*poolRun, waiting map[string]bool) {
	if err != nil {
		pl.r.logf("heartbeat failed (will retry): %v", err)
	}
	now := time.Now()
	for i, t := range tokens {
		run := runs[t]
		ok := err == nil && i < len(res) && res[i].OK && res[i].LeaseExpiresAt != nil
		if ok {
			run.lease = *res[i].LeaseExpiresAt
		}
		_, live := pl.live[t]
		stale := err == nil && i < len(res) && res[i].Code == string(backends.CodeStaleClaim)
		switch {
		case ok:
		case live && stale:
			pl.lose(run, "claim is no longer ours: STALE_CLAIM")
		case live && !now.Before(run.lease):
			pl.lose(run, "lease passed without a successful heartbeat")
		case waiting[t] && stale:
			// Its ending is not sent. A waiting claim whose heartbeat only
			// failed is ended all the same: the server, which may have
			// extended its lease, decides.
			run.lost = true
		}
	}
}

// lose stops the process of a claim that is no longer this runner's.
func (pl *pool) lose(run *poolRun, why string) {
	run.lost, run.stopped = true, true
	go func() { _ = run.p.stop(pl.opt.KillGrace, pl.r.logf, why) }()
}

func tokensOf(items []client.FailItem) []string {
	ts := make([]string, len(items))
	for i, it := range items {
		ts[i] = it.Token
	}
	return ts
}

// cutReason keeps the last bytes of a failure reason the server keeps.
func cutReason(s string) string {
	if len(s) > backends.MaxReasonBytes {
		return s[len(s)-backends.MaxReasonBytes:]
	}
	return s
}
