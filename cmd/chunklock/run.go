package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
	"github.com/chunklock/chunklock/runner"
)

func runCommand() *cli.Command {
	one := 1
	return &cli.Command{
		Name:      "run",
		Category:  catRunner,
		Usage:     "claim chunks and run a command on each, supervised",
		UsageText: "chunklock run --job J [--job J2...] [--loop [--max N] [--idle-wait D]] [--dataid D] -- CMD [ARGS...]",
		ArgsUsage: "-- CMD [ARGS...]",
		Description: "Claims a chunk of the job and runs CMD with the claim in its environment:\n" +
			"   CHUNKLOCK_JOB, CHUNKLOCK_DATAID, CHUNKLOCK_ATTEMPT, CHUNKLOCK_EXECUTOR, CHUNKLOCK_FENCE,\n" +
			"   CHUNKLOCK_CLAIM_TOKEN, CHUNKLOCK_URL,\n" +
			"   CHUNKLOCK_OUTPUT_{DATASET,URL,CONNECTION,LOCATION,SECRET},\n" +
			"   CHUNKLOCK_INPUTS (input dataset ids, comma-separated),\n" +
			"   CHUNKLOCK_INPUT_<DATASET>_{URL,CONNECTION,LOCATION,SECRET} (DATASET upper-cased, other\n" +
			"   characters as _), CHUNKLOCK_INPUT_<n>_{DATASET,...} (n from 0, in input order),\n" +
			"   and the job's env. SECRET variables need the job key (CHUNKLOCK_JOB_KEY or --job-key-file).\n\n" +
			"While CMD runs the claim is heartbeaten every third of the job's leaseSeconds. Exit 0\n" +
			"completes the claim (the output chunk becomes READY); any other exit fails it with the\n" +
			"tail of CMD's stderr as the reason (it is retried, up to the job's maxAttempts). If the\n" +
			"claim stops being ours (expired, or forced by an operator) CMD is stopped at once\n" +
			"(SIGTERM to its process group, SIGKILL after --kill-grace) and nothing is written.\n" +
			"SIGINT or SIGTERM to the runner stops CMD the same way and releases the claim (no\n" +
			"attempt is counted). On Linux, if the runner is killed, CMD is killed with it.\n\n" +
			"The runner refuses a job whose env names a variable that changes how a process loads\n" +
			"or runs code (PATH, LD_*, BASH_ENV, PYTHON*, ...) or one of its own CHUNKLOCK_*, which\n" +
			"a server older than that rule may still hold: at start it exits with an error before\n" +
			"claiming; should a claim bring such an env later, CMD is not started, the claim is\n" +
			"failed with the variables' names as the reason, and the runner stops serving the job.\n\n" +
			"With several --job the runner serves each in turn (CMD can dispatch on CHUNKLOCK_JOB).\n" +
			"With --loop it keeps claiming until nothing is left, or with --idle-wait D waits up to\n" +
			"D without work for new chunks (it follows the server's events subscription and falls\n" +
			"back to polling when that is unavailable). A server that cannot be reached is retried\n" +
			"with backoff for up to --retry-for.\n\n" +
			"Exit status:\n" +
			"   0    the chunk was completed (--loop: nothing is left to do; failed chunks are\n" +
			"        recorded on the server, see `chunklock status`)\n" +
			"   3    nothing to do: no chunk was claimable (without --loop)\n" +
			"   1    CMD failed, the claim was lost, or an error\n" +
			"   130  stopped by SIGINT, 143 by SIGTERM (the claim was released)\n\n" +
			"Examples:\n" +
			"   chunklock run --job transform -- ./jobs/transform.sh\n" +
			"   chunklock run --job extract --job transform --loop --idle-wait 10m -- sh -c './jobs/$CHUNKLOCK_JOB.sh'" + connHelp,
		StopOnNthArg: &one,
		Flags: append(append(connFlags(), jobKeyFlags()...),
			&cli.StringSliceFlag{Name: "job", Required: true, Usage: "the `job` to claim for; repeat to serve several"},
			&cli.BoolFlag{Name: "loop", Usage: "keep claiming until nothing is left (see --idle-wait)"},
			&cli.IntFlag{Name: "max", Usage: "with --loop, stop after `N` chunks (0: no limit)"},
			&cli.DurationFlag{Name: "idle-wait", Usage: "with --loop, wait up to `D` without work for new chunks before exiting (0: exit as soon as nothing is claimable)"},
			&cli.StringFlag{Name: "dataid", Usage: "claim this `dataid` (one job, without --loop); how a job without inputs gets new chunks"},
			&cli.StringFlag{Name: "executor", DefaultText: "host-pid-random", Usage: "the `name` operators see as the holder of this runner's claims"},
			&cli.StringFlag{Name: "dir", TakesFile: true, Usage: "working `directory` of CMD (default: the current one)"},
			&cli.DurationFlag{Name: "kill-grace", Value: 10 * time.Second, Usage: "how long CMD gets between SIGTERM and SIGKILL when it must stop"},
			&cli.DurationFlag{Name: "retry-for", Value: 5 * time.Minute, Usage: "how long to keep retrying a server that cannot be reached before giving up"},
		),
		Action: action(runJobs),
	}
}

// exitSignal is the exit status of a runner stopped by a signal.
func exitSignal(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitError
}

type jobRunner struct {
	cmd      *cli.Command
	c        *client.Client            // without a job key
	clients  map[string]*client.Client // per job, with its key
	jobs     []string
	leases   map[string]time.Duration
	filters  []client.EventFilter
	executor string
	retryFor time.Duration
	argv     []string
	next     int // the job tried first by the next claim
	stats    map[runner.Outcome]int
}

func (r *jobRunner) logf(format string, args ...any) {
	fmt.Fprintf(stderr(r.cmd), "chunklock run: "+format+"\n", args...)
}

func runJobs(ctx context.Context, cmd *cli.Command, c *client.Client) error {
	argv := cmd.Args().Slice()
	if len(argv) == 0 {
		return errors.New("no command to run: give it after --, e.g. `chunklock run --job J -- ./job.sh`")
	}
	jobs := slices.Compact(cmd.StringSlice("job"))
	loop := cmd.Bool("loop")
	dataid := cmd.String("dataid")
	switch {
	case dataid != "" && (loop || len(jobs) > 1):
		return errors.New("--dataid claims one chunk of one job: use it without --loop and with a single --job")
	case !loop && (cmd.IsSet("max") || cmd.IsSet("idle-wait")):
		return errors.New("--max and --idle-wait apply to --loop only")
	case cmd.Int("max") < 0 || cmd.Duration("idle-wait") < 0:
		return errors.New("--max and --idle-wait must not be negative")
	}
	r := &jobRunner{cmd: cmd, c: c, clients: map[string]*client.Client{}, jobs: jobs, leases: map[string]time.Duration{},
		executor: cmd.String("executor"), retryFor: cmd.Duration("retry-for"), argv: argv, stats: map[runner.Outcome]int{}}
	for _, j := range jobs {
		key, err := jobKeyFor(cmd, j, len(jobs) > 1)
		if err != nil {
			return err
		}
		if r.clients[j], err = newClient(cmd, key); err != nil {
			return err
		}
	}
	if r.executor == "" {
		r.executor = defaultExecutor()
	}

	// Stop on SIGINT/SIGTERM: the current job process is stopped and its
	// claim released.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got os.Signal
	sigDone := make(chan struct{})
	go func() {
		defer close(sigDone)
		select {
		case got = <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	stopped := func() error {
		cancel()
		<-sigDone
		if got != nil {
			r.logf("stopped by %v after %s", got, r.summary())
			return exitStatus(exitSignal(got))
		}
		return ctx.Err()
	}

	// The jobs must exist; their leases set the heartbeat.
	inputs := map[string]bool{}
	for _, j := range jobs {
		job, err := retry(ctx, r.retryFor, r.logf, "reading job "+j, func(ctx context.Context) (client.Job, error) { return c.Job(ctx, j) })
		if err != nil {
			if ctx.Err() != nil {
				return stopped()
			}
			if client.CodeOf(err) == backends.CodeNotFound {
				return fmt.Errorf("job %q not found on %s; `chunklock status` lists the jobs, `chunklock apply` creates them", j, cmd.String("url"))
			}
			return err
		}
		if err := checkJobEnv(job); err != nil {
			return err
		}
		r.leases[j] = time.Duration(job.LeaseSeconds) * time.Second
		if job.Paused {
			r.logf("job %s is paused: it claims nothing until it is unpaused", j)
		}
		r.filters = append(r.filters, client.EventFilter{Job: j})
		for _, in := range job.Inputs {
			if !inputs[in] {
				inputs[in] = true
				r.filters = append(r.filters, client.EventFilter{Dataset: in})
			}
		}
	}

	if !loop {
		claim, err := r.claim(ctx, dataid)
		switch {
		case ctx.Err() != nil:
			return stopped()
		case err != nil:
			var ce *client.Error
			if errors.As(err, &ce) && ce.Code == backends.CodeLocked {
				return exitWith(cmd, exitNothing, "nothing to do: %v", explain(cmd, err))
			}
			return err
		case claim == nil:
			return exitWith(cmd, exitNothing, "nothing to do: no claimable chunk for %v", jobs)
		}
		outcome, err := r.supervise(ctx, *claim)
		switch {
		case outcome == runner.Released:
			if err != nil {
				r.logf("%v", err)
			}
			return stopped()
		case err != nil:
			return err
		case outcome == runner.Completed:
			return nil
		case outcome == runner.Failed:
			return exitWith(cmd, exitError, "chunklock run: %s %s failed; the claim was failed and the chunk will be retried", claim.Job, claim.DataID)
		default:
			return exitWith(cmd, exitError, "chunklock run: the claim on %s %s was lost (expired or forced); the job process was stopped and nothing was written", claim.Job, claim.DataID)
		}
	}

	maxChunks, idleWait := cmd.Int("max"), cmd.Duration("idle-wait")
	w := &waiter{r: r, idleWait: idleWait, wake: make(chan struct{}, 1)}
	defer w.close()
	for done := 0; maxChunks == 0 || done < maxChunks; {
		claim, err := r.claim(ctx, "")
		if ctx.Err() != nil {
			return stopped()
		}
		if err != nil {
			return fmt.Errorf("%w (after %s)", err, r.summary())
		}
		if claim == nil {
			if idleWait == 0 || !w.wait(ctx) {
				if ctx.Err() != nil {
					return stopped()
				}
				r.logf("nothing left to do: %s", r.summary())
				return nil
			}
			continue
		}
		w.busy()
		done++
		outcome, err := r.supervise(ctx, *claim)
		if outcome == runner.Released {
			if err != nil {
				r.logf("%v", err)
			}
			return stopped()
		}
		if err != nil {
			r.logf("%v", err)
		}
		if envErr := (*runner.EnvError)(nil); errors.As(err, &envErr) && !r.drop(claim.Job) {
			return fmt.Errorf("no job left to serve: the runner refuses the env of %v (after %s)", jobs, r.summary())
		}
	}
	r.logf("reached --max %d: %s", maxChunks, r.summary())
	return nil
}

func (r *jobRunner) summary() string {
	return fmt.Sprintf("%d completed, %d failed, %d lost", r.stats[runner.Completed], r.stats[runner.Failed], r.stats[runner.Stale])
}

// checkJobEnv refuses, before anything is claimed, a job whose env names a
// variable the runner refuses (see runner.CheckEnv).
func checkJobEnv(job client.Job) error {
	if err := runner.CheckEnv(client.Claim{Job: job.ID, Env: job.Env}); err != nil {
		return fmt.Errorf("%w; nothing was claimed: fix the job's env (`chunklock apply`)", err)
	}
	return nil
}

// drop stops serving job, whose env the runner refuses; false when no job
// is left.
func (r *jobRunner) drop(job string) bool {
	r.jobs = slices.DeleteFunc(r.jobs, func(j string) bool { return j == job })
	r.next = 0
	if len(r.jobs) > 0 {
		r.logf("not serving job %s any more: its env is refused; serving %v", job, r.jobs)
	}
	return len(r.jobs) > 0
}

// claim claims a chunk of one of the jobs, trying them in turn from where
// the last claim left off; nil when none has a claimable chunk.
func (r *jobRunner) claim(ctx context.Context, dataid string) (*client.Claim, error) {
	for i := range r.jobs {
		job := r.jobs[(r.next+i)%len(r.jobs)]
		claim, err := retry(ctx, r.retryFor, r.logf, "claiming a chunk of "+job, func(ctx context.Context) (*client.Claim, error) {
			if dataid != "" {
				return r.clients[job].Claim(ctx, job, dataid, r.executor)
			}
			return r.clients[job].FindNext(ctx, job, r.executor)
		})
		if err != nil || claim != nil {
			r.next = (r.next + i + 1) % len(r.jobs)
			return claim, err
		}
	}
	return nil, nil
}

// supervise runs the command under one claim.
func (r *jobRunner) supervise(ctx context.Context, claim client.Claim) (runner.Outcome, error) {
	start := time.Now()
	r.logf("claimed %s %s (attempt %d, executor %s)", claim.Job, claim.DataID, claim.Attempt, claim.Executor)
	lease := r.leases[claim.Job]
	if lease <= 0 {
		lease = time.Until(claim.LeaseExpiresAt)
	}
	outcome, err := runner.Run(ctx, retrying{r}, claim, runner.Options{
		Command:   r.argv,
		Dir:       r.cmd.String("dir"),
		Env:       []string{"CHUNKLOCK_URL=" + r.cmd.String("url")},
		Stdout:    stdout(r.cmd),
		Stderr:    stderr(r.cmd),
		Heartbeat: lease / 3,
		KillGrace: r.cmd.Duration("kill-grace"),
		IsStale:   func(err error) bool { return client.CodeOf(err) == backends.CodeStaleClaim },
		Logf:      r.logf,
	})
	r.stats[outcome]++
	took := time.Since(start).Round(time.Millisecond)
	switch outcome {
	case runner.Completed:
		r.logf("completed %s %s in %s", claim.Job, claim.DataID, took)
	case runner.Failed:
		r.logf("failed %s %s after %s (the chunk will be retried up to the job's maxAttempts)", claim.Job, claim.DataID, took)
	case runner.Released:
		r.logf("released %s %s: the job process was stopped", claim.Job, claim.DataID)
	case runner.Stale:
		r.logf("lost the claim on %s %s (expired or forced by an operator): the job process was stopped, nothing written", claim.Job, claim.DataID)
	}
	var envErr *runner.EnvError
	switch {
	case errors.As(err, &envErr):
		err = fmt.Errorf("%w; the claim on %s %s was failed with this reason and the job process not started: fix the job's env (`chunklock apply`)", err, claim.Job, claim.DataID)
	case err != nil:
		err = explain(r.cmd, err)
	}
	return outcome, err
}

// retrying is the runner.Client of supervise: completions, failures and
// releases are retried while the server cannot be reached (heartbeats are
// retried by runner.Run itself, until the lease passes).
type retrying struct{ r *jobRunner }

func (c retrying) Heartbeat(ctx context.Context, token string) (time.Time, error) {
	return c.r.c.Heartbeat(ctx, token)
}

func (c retrying) Complete(ctx context.Context, token string) error {
	return c.do(ctx, "completing the claim", func(ctx context.Context) error { return c.r.c.Complete(ctx, token) })
}

func (c retrying) Fail(ctx context.Context, token, reason string) error {
	return c.do(ctx, "failing the claim", func(ctx context.Context) error { return c.r.c.Fail(ctx, token, reason) })
}

func (c retrying) Release(ctx context.Context, token string) error {
	return c.do(ctx, "releasing the claim", func(ctx context.Context) error { return c.r.c.Release(ctx, token) })
}

func (c retrying) do(ctx context.Context, what string, f func(context.Context) error) error {
	_, err := retry(ctx, c.r.retryFor, c.r.logf, what, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
	return err
}

// waiter waits, while the runner is idle, for something that may make a
// chunk claimable: an event on the jobs' rows or on their input datasets,
// from the events subscription; or, when the subscription is unavailable,
// the next poll.
//
// The subscription is opened the first time the runner is idle and kept
// until it exits; a goroutine drains it all along (so a long job never
// leaves the server's messages unread) and remembers the cursor of the last
// event, from which a broken subscription resumes without a gap. A new
// subscription is live only some moments after it is asked for, so the
// runner asks for work right after subscribing, and once more every few
// seconds while idle, in case an event fell in that moment.
type waiter struct {
	r        *jobRunner
	idleWait time.Duration
	since    time.Time     // when the runner became idle; zero while busy
	wake     chan struct{} // an event came (capacity 1)
	sub      *client.Subscription
	drained  chan struct{} // closed when the drain goroutine ends
	retrySub time.Time     // when to try subscribing again after a failure

	mu     sync.Mutex
	cursor string // of the last event seen
}

// busy records that the runner got work.
func (w *waiter) busy() { w.since = time.Time{} }

func (w *waiter) close() {
	if w.sub != nil {
		_ = w.sub.Close()
		<-w.drained
	}
}

// pollInterval is how often an idle runner without the subscription asks
// for work.
func (w *waiter) pollInterval() time.Duration {
	return min(max(w.idleWait/10, 200*time.Millisecond), 2*time.Second)
}

// safetyPoll is how often an idle runner with the subscription asks for
// work anyway.
func (w *waiter) safetyPoll() time.Duration {
	return min(max(w.idleWait/4, time.Second), 5*time.Second)
}

func (w *waiter) subscribe(ctx context.Context) error {
	w.mu.Lock()
	after := w.cursor
	w.mu.Unlock()
	sub, err := w.r.c.WatchEvents(ctx, after, w.r.filters...)
	if err != nil {
		return err
	}
	w.sub, w.drained = sub, make(chan struct{})
	go func(sub *client.Subscription, drained chan struct{}) {
		defer close(drained)
		for m := range sub.Messages() {
			if e, err := client.DecodeEvent(m); err == nil && e.Cursor != "" {
				w.mu.Lock()
				w.cursor = e.Cursor
				w.mu.Unlock()
			}
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}(sub, w.drained)
	return nil
}

// wait blocks until it is worth asking for work again (true), or the
// runner has been idle for idleWait or ctx ended (false).
func (w *waiter) wait(ctx context.Context) bool {
	if w.since.IsZero() {
		w.since = time.Now()
		w.r.logf("idle: waiting up to %s for new chunks", w.idleWait)
	}
	left := w.idleWait - time.Since(w.since)
	if left <= 0 {
		return false
	}
	if w.sub != nil {
		select {
		case <-w.drained:
			w.r.logf("events subscription ended (%v); polling every %s until it is back", explain(w.r.cmd, w.sub.Err()), w.pollInterval())
			_ = w.sub.Close()
			w.sub = nil
			w.retrySub = time.Now().Add(2 * time.Second)
			return true
		default:
		}
	}
	if w.sub == nil && !time.Now().Before(w.retrySub) {
		if err := w.subscribe(ctx); err != nil {
			if ctx.Err() != nil {
				return false
			}
			w.retrySub = time.Now().Add(10 * time.Second)
			w.r.logf("events subscription unavailable (%v); polling every %s", explain(w.r.cmd, err), w.pollInterval())
		} else {
			// What happened before the subscription started is not in
			// it: ask once more right away.
			return true
		}
	}
	poll := w.pollInterval()
	var drained <-chan struct{}
	if w.sub != nil {
		poll, drained = w.safetyPoll(), w.drained
	}
	timer := time.NewTimer(min(poll, left))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return time.Since(w.since) < w.idleWait
	case <-w.wake:
		return true
	case <-drained:
		return true // reported at the next wait
	}
}
