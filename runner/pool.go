package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
)

// A runner pool (Config.Parallel above 1): one runner keeps up to Parallel
// job processes running. It claims for all its free slots in one claimNext
// call, heartbeats all its live claims in one heartbeatMany call per
// interval (a third of the shortest lease of its jobs), and ends the
// claims of the processes that exited together in one completeMany and one
// failMany call. A process whose claim is lost (STALE_CLAIM, or its lease
// passed without a successful heartbeat) is stopped and nothing is written
// for it. On a stop signal it claims nothing more, releases what it has
// claimed and not started, and waits for the running processes, which it
// still heartbeats and ends as they exit.

// poolRun is one process of a pool and its claim.
type poolRun struct {
	claim client.Claim
	p     *proc
	lease time.Time
	since time.Time // when the process started
	lost  bool      // the claim is no longer this runner's: the process is being stopped
}

type pool struct {
	r        *loop
	opt      Options
	live     map[string]*poolRun // by token
	exits    chan string         // tokens of processes that exited
	started  int
	draining bool  // claims nothing more
	err      error // what stopped the claiming, returned once the pool is empty
}

// servePool is serve for a pool.
func (r *loop) servePool(ctx context.Context) error {
	pl := &pool{r: r, live: map[string]*poolRun{}, exits: make(chan string, r.cfg.Parallel)}
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
		if len(pl.live) == 0 {
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
			pl.ended(bg, tok)
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
// it claimed.
func (pl *pool) fill(ctx context.Context) int {
	r := pl.r
	free := r.cfg.Parallel - len(pl.live)
	if r.cfg.Max > 0 {
		free = min(free, r.cfg.Max-pl.started)
		if free <= 0 {
			pl.draining = true
		}
	}
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
		for _, c := range cs {
			pl.start(ctx, *c)
		}
		free -= len(cs)
		claimed += len(cs)
		if len(cs) > 0 {
			r.next = (r.next + i + 1) % len(r.jobs)
		}
	}
	return claimed
}

// start starts the process of claim c, or gives c back: released when the
// runner is stopping, failed when its env is refused or it cannot start.
func (pl *pool) start(ctx context.Context, c client.Claim) {
	r := pl.r
	pl.started++
	if ctx.Err() != nil {
		bg := context.WithoutCancel(ctx)
		if err := (retrying{r}).Release(bg, c.Token); err != nil && client.CodeOf(err) != backends.CodeStaleClaim {
			r.logf("releasing %s %s, not started: %v", c.Job, c.DataID, err)
		}
		r.stats[Released]++
		r.report(Released, c, 0)
		return
	}
	r.logf("claimed %s %s (attempt %d, executor %s)", c.Job, c.DataID, c.Attempt, c.Executor)
	err := CheckEnv(c, pl.opt.EnvAllow)
	var p *proc
	if err == nil {
		p, err = startProc(c, pl.opt)
	}
	if err != nil {
		outcome, ferr := failUnstarted(ctx, retrying{r}, c, pl.opt, err)
		r.stats[outcome]++
		r.report(outcome, c, 0)
		r.logf("%v", ferr)
		if envErr := (*EnvError)(nil); errors.As(err, &envErr) && !r.drop(c.Job) {
			pl.err, pl.draining = fmt.Errorf("runner: no job left to serve: the runner refuses the env of %v", r.cfg.Jobs), true
		}
		return
	}
	pl.live[c.Token] = &poolRun{claim: c, p: p, lease: c.LeaseExpiresAt, since: time.Now()}
	go func() {
		<-p.done
		pl.exits <- c.Token
	}()
}

// ended ends the claims of tok's process and of every other process that
// has exited by now: completions in one call, failures in another.
func (pl *pool) ended(ctx context.Context, tok string) {
	tokens := []string{tok}
	for more := true; more; {
		select {
		case t := <-pl.exits:
			tokens = append(tokens, t)
		default:
			more = false
		}
	}
	var done []string
	var failed []client.FailItem
	runs := map[string]*poolRun{}
	for _, t := range tokens {
		run := pl.live[t]
		delete(pl.live, t)
		runs[t] = run
		switch {
		case run.lost:
			pl.r.stats[Stale]++
			pl.r.report(Stale, run.claim, time.Since(run.since))
		case run.p.err == nil:
			done = append(done, t)
		default:
			failed = append(failed, client.FailItem{Token: t, Reason: cutReason(run.p.reason())})
		}
	}
	pl.endBatch(ctx, "completing", Completed, runs, done, func(ctx context.Context) ([]client.TokenResult, error) {
		return pl.r.cfg.Client.CompleteMany(ctx, done)
	})
	pl.endBatch(ctx, "failing", Failed, runs, tokensOf(failed), func(ctx context.Context) ([]client.TokenResult, error) {
		return pl.r.cfg.Client.FailMany(ctx, failed)
	})
}

// endBatch sends one batch of endings (none when tokens is empty), retried
// while the server cannot be reached, and counts each token's outcome.
func (pl *pool) endBatch(ctx context.Context, what string, outcome Outcome, runs map[string]*poolRun, tokens []string, call func(context.Context) ([]client.TokenResult, error)) {
	if len(tokens) == 0 {
		return
	}
	r := pl.r
	res, err := retry(ctx, r.cfg.RetryFor, r.logf, what+" claims", call)
	for i, t := range tokens {
		run := runs[t]
		got := outcome
		switch {
		case err != nil:
			r.logf("%s %s %s: %v", what, run.claim.Job, run.claim.DataID, r.cfg.Explain(err))
		case i < len(res) && !res[i].OK && res[i].Code == string(backends.CodeStaleClaim):
			got = Stale
		case i < len(res) && !res[i].OK:
			r.logf("%s %s %s: %s", what, run.claim.Job, run.claim.DataID, res[i].Code)
		}
		r.stats[got]++
		r.report(got, run.claim, time.Since(run.since))
	}
}

// heartbeat extends the leases of every live claim in one call; a claim
// answered STALE_CLAIM, or whose lease passed without a successful
// heartbeat, is lost: its process is stopped and nothing is written for it.
func (pl *pool) heartbeat(ctx context.Context) {
	var tokens []string
	for t, run := range pl.live {
		if !run.lost {
			tokens = append(tokens, t)
		}
	}
	if len(tokens) == 0 {
		return
	}
	slices.Sort(tokens)
	hctx, cancel := context.WithTimeout(ctx, pl.opt.Heartbeat)
	res, err := pl.r.cfg.Client.HeartbeatMany(hctx, tokens)
	cancel()
	if err != nil {
		pl.r.logf("heartbeat failed (will retry): %v", err)
	}
	now := time.Now()
	for i, t := range tokens {
		run := pl.live[t]
		switch {
		case err == nil && i < len(res) && res[i].OK && res[i].LeaseExpiresAt != nil:
			run.lease = *res[i].LeaseExpiresAt
			continue
		case err == nil && i < len(res) && res[i].Code == string(backends.CodeStaleClaim):
			pl.lose(run, "claim is no longer ours: STALE_CLAIM")
		case !now.Before(run.lease):
			pl.lose(run, "lease passed without a successful heartbeat")
		}
	}
}

// lose stops the process of a claim that is no longer this runner's.
func (pl *pool) lose(run *poolRun, why string) {
	run.lost = true
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
