package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/client"
)

// Config configures Loop.
type Config struct {
	// Client reads the jobs, follows the events subscription and
	// heartbeats, completes, fails and releases claims.
	Client *client.Client
	// JobClients holds the client that claims a job's chunks, by job: one
	// with the job's key, so that claims carry the datasets' secrets. A job
	// missing from it claims with Client.
	JobClients map[string]*client.Client
	// Jobs are the jobs to serve, each once, tried in turn.
	Jobs []string
	// Loop keeps claiming until nothing is left (see IdleWait); without it
	// Loop claims and runs one chunk.
	Loop bool
	// Max, with Loop, stops after that many chunks (0: no limit).
	Max int
	// Parallel, with Loop, above 1 keeps up to that many job processes
	// running at once, claiming, heartbeating and ending their claims in
	// batches (pool.go).
	Parallel int
	// IdleWait, with Loop, is how long to wait without work for new chunks
	// before stopping (0: stop as soon as nothing is claimable).
	IdleWait time.Duration
	// DataID, without Loop and with a single job, claims that chunk rather
	// than the next one.
	DataID string
	// Executor is the name operators see as the holder of the claims.
	Executor string
	// RetryFor is how long a server that cannot be reached is retried, with
	// backoff, before giving up.
	RetryFor time.Duration
	// URL is the server's, given to the job process as CHUNKLOCK_URL and
	// named in messages.
	URL string
	// Command, Dir, Stdout, Stderr and KillGrace are those of Options.
	Command        []string
	Dir            string
	Stdout, Stderr io.Writer
	KillGrace      time.Duration
	// StopSignals stop the runner: the job process is stopped, its claim
	// released, and Loop returns a *Stopped.
	StopSignals []os.Signal
	// Logf reports what the runner does (default: discard).
	Logf func(format string, args ...any)
	// Explain turns an error from the server into a message for the
	// operator (default: the error as is).
	Explain func(error) error
	// EnvAllow is Options.EnvAllow: the job env names this runner admits
	// although envname's rule refuses them.
	EnvAllow envname.Allow
}

// Stopped is Loop's error when one of Config.StopSignals stopped it.
type Stopped struct{ Signal os.Signal }

func (s *Stopped) Error() string { return "stopped by " + signalName(s.Signal) }

// signalName is a stop signal as operators spell it (SIGTERM, not
// "terminated").
func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return fmt.Sprint(s)
}

// NothingToDo is Loop's error when, without Config.Loop, no chunk was
// claimable. Err, when set, is the server's answer for the chunk asked for
// (Config.DataID is locked).
type NothingToDo struct {
	Jobs []string
	Err  error
}

func (e *NothingToDo) Error() string {
	if e.Err != nil {
		return "nothing to do: " + e.Err.Error()
	}
	return fmt.Sprintf("nothing to do: no claimable chunk for %v", e.Jobs)
}

// ChunkError is Loop's error when, without Config.Loop, the one chunk run
// was not completed: Outcome is Failed or Stale.
type ChunkError struct {
	Outcome     Outcome
	Job, DataID string
}

func (e *ChunkError) Error() string {
	if e.Outcome == Failed {
		return fmt.Sprintf("%s %s failed; the claim was failed (it is retried while the job's maxAttempts allow)", e.Job, e.DataID)
	}
	return fmt.Sprintf("the claim on %s %s was lost (expired or forced); nothing was written for it", e.Job, e.DataID)
}

// Loop is a runner's worker loop: it claims chunks of the jobs, trying
// them in turn from where the last claim left off, and runs Command on
// each under Run. Before claiming it reads the jobs, whose leases set the
// heartbeat, and refuses a job whose env names a variable CheckEnv
// refuses. With Config.Loop it goes on until nothing is claimable, or, with
// IdleWait, until it has been idle that long (it follows the server's events
// subscription meanwhile, and polls when that is unavailable); it stops
// serving a job whose claim brings a refused env. A server that cannot be
// reached is retried for up to RetryFor.
//
// Loop returns nil when the chunk was completed (with Config.Loop: when
// nothing is left or Max is reached), a *NothingToDo, a *ChunkError, a
// *Stopped, ctx's error if ctx ended, or the error that stopped it.
func Loop(ctx context.Context, cfg Config) error {
	if cfg.Client == nil || len(cfg.Jobs) == 0 {
		return errors.New("runner: Loop needs a Client and at least one job")
	}
	cfg.defaults()
	r := &loop{cfg: cfg, jobs: slices.Clone(cfg.Jobs), leases: map[string]time.Duration{}, tries: map[string]int{}, stats: map[Outcome]int{}}
	ctx, stop := r.watchSignals(ctx)
	defer stop()
	if err := r.readJobs(ctx); err != nil {
		return err
	}
	if !cfg.Loop {
		return r.once(ctx)
	}
	return r.serve(ctx)
}

func (c *Config) defaults() {
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	if c.Explain == nil {
		c.Explain = func(err error) error { return err }
	}
}

// loop is the state of one Loop.
type loop struct {
	cfg     Config
	jobs    []string // still served
	leases  map[string]time.Duration
	tries   map[string]int       // each job's maxAttempts, as last read
	triesMu sync.Mutex           // guards tries: a pool's endings read them beside its loop
	filters []client.EventFilter // the events that may make a chunk claimable
	next    int                  // the job tried first by the next claim
	stats   map[Outcome]int

	ctx     context.Context // Loop's, cancelled by a stop signal
	cancel  context.CancelFunc
	sigDone chan struct{} // closed when the signal watcher ends
	got     os.Signal     // the stop signal received; read after sigDone
}

func (r *loop) logf(format string, args ...any) { r.cfg.Logf(format, args...) }

// watchSignals returns a context that a stop signal cancels, and the
// function that stops watching.
func (r *loop) watchSignals(ctx context.Context) (context.Context, func()) {
	sigs := make(chan os.Signal, 1)
	if len(r.cfg.StopSignals) > 0 {
		signal.Notify(sigs, r.cfg.StopSignals...)
	}
	r.ctx, r.cancel = context.WithCancel(ctx)
	r.sigDone = make(chan struct{})
	go func() {
		defer close(r.sigDone)
		select {
		case r.got = <-sigs:
			r.cancel()
		case <-r.ctx.Done():
		}
	}()
	return r.ctx, func() {
		r.cancel()
		signal.Stop(sigs)
	}
}

// stopped ends the loop once ctx is done: a *Stopped if a signal did it.
func (r *loop) stopped() error {
	r.cancel()
	<-r.sigDone
	if r.got != nil {
		r.logf("stopped by %s after %s", signalName(r.got), r.summary())
		return &Stopped{Signal: r.got}
	}
	return r.ctx.Err()
}

// readJobs checks that the jobs exist and that the runner accepts their
// env, and records their leases and the events to follow while idle.
func (r *loop) readJobs(ctx context.Context) error {
	inputs := map[string]bool{}
	for _, j := range r.jobs {
		job, err := retry(ctx, r.cfg.RetryFor, r.logf, "reading job "+j, func(ctx context.Context) (client.Job, error) { return r.cfg.Client.Job(ctx, j) })
		if err != nil {
			if ctx.Err() != nil {
				return r.stopped()
			}
			if client.CodeOf(err) == backends.CodeNotFound {
				return fmt.Errorf("runner: job %q not found on %s; `chunklock status` lists the jobs, `chunklock apply` creates them", j, r.cfg.URL)
			}
			return err
		}
		if err := checkJobEnv(job, r.cfg.EnvAllow); err != nil {
			return err
		}
		r.leases[j] = time.Duration(job.LeaseSeconds) * time.Second
		r.triesMu.Lock()
		r.tries[j] = job.MaxAttempts
		r.triesMu.Unlock()
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
	return nil
}

// checkJobEnv refuses, before anything is claimed, a job whose env names a
// variable the runner refuses (see CheckEnv).
func checkJobEnv(job client.Job, allow envname.Allow) error {
	if err := CheckEnv(client.Claim{Job: job.ID, Env: job.Env}, allow); err != nil {
		return fmt.Errorf("%w; nothing was claimed: fix the job's env (`chunklock apply`)", err)
	}
	return nil
}

// once claims one chunk and runs the command on it.
func (r *loop) once(ctx context.Context) error {
	claim, err := r.claim(ctx, r.cfg.DataID)
	switch {
	case ctx.Err() != nil:
		return r.stopped()
	case err != nil:
		var ce *client.Error
		if errors.As(err, &ce) && ce.Code == backends.CodeLocked {
			return &NothingToDo{Jobs: r.jobs, Err: r.cfg.Explain(err)}
		}
		return err
	case claim == nil:
		return &NothingToDo{Jobs: r.jobs}
	}
	outcome, err := r.supervise(ctx, *claim)
	switch {
	case outcome == Released:
		if err != nil {
			r.logf("%v", err)
		}
		return r.stopped()
	case err != nil:
		return err
	case outcome == Completed:
		return nil
	default:
		return &ChunkError{Outcome: outcome, Job: claim.Job, DataID: claim.DataID}
	}
}

// serve claims and runs chunks until nothing is left, Max is reached, or
// the runner is stopped.
func (r *loop) serve(ctx context.Context) error {
	if r.cfg.Parallel > 1 {
		return r.servePool(ctx)
	}
	w := &waiter{r: r, idleWait: r.cfg.IdleWait, wake: make(chan struct{}, 1)}
	defer w.close()
	for done := 0; r.cfg.Max == 0 || done < r.cfg.Max; {
		claim, err := r.claim(ctx, "")
		if ctx.Err() != nil {
			return r.stopped()
		}
		if err != nil {
			return fmt.Errorf("%w (after %s)", err, r.summary())
		}
		if claim == nil {
			if r.cfg.IdleWait == 0 || !w.wait(ctx) {
				if ctx.Err() != nil {
					return r.stopped()
				}
				r.logf("nothing left to do: %s", r.summary())
				return nil
			}
			continue
		}
		w.busy()
		done++
		if end, err := r.serveOne(ctx, *claim); end {
			return err
		}
	}
	r.logf("reached --max %d: %s", r.cfg.Max, r.summary())
	return nil
}

// serveOne runs the command on one claim of serve; end tells serve to
// return err.
func (r *loop) serveOne(ctx context.Context, claim client.Claim) (end bool, err error) {
	outcome, err := r.supervise(ctx, claim)
	if outcome == Released {
		if err != nil {
			r.logf("%v", err)
		}
		return true, r.stopped()
	}
	if err != nil {
		r.logf("%v", err)
	}
	if envErr := (*EnvError)(nil); errors.As(err, &envErr) && !r.drop(claim.Job) {
		return true, fmt.Errorf("runner: no job left to serve: the runner refuses the env of %v (after %s)", r.cfg.Jobs, r.summary())
	}
	return false, nil
}

func (r *loop) summary() string {
	return fmt.Sprintf("%d completed, %d failed, %d lost", r.stats[Completed], r.stats[Failed], r.stats[Stale])
}

// drop stops serving job, whose env the runner refuses; false when no job
// is left.
func (r *loop) drop(job string) bool {
	r.jobs = slices.DeleteFunc(r.jobs, func(j string) bool { return j == job })
	r.next = 0
	if len(r.jobs) > 0 {
		r.logf("not serving job %s any more: its env is refused; serving %v", job, r.jobs)
	}
	return len(r.jobs) > 0
}

// clientFor is the client that claims job's chunks.
func (r *loop) clientFor(job string) *client.Client {
	if c := r.cfg.JobClients[job]; c != nil {
		return c
	}
	return r.cfg.Client
}

// claim claims a chunk of one of the jobs, trying them in turn from where
// the last claim left off; nil when none has a claimable chunk.
func (r *loop) claim(ctx context.Context, dataid string) (*client.Claim, error) {
	for i := range r.jobs {
		job := r.jobs[(r.next+i)%len(r.jobs)]
		claim, err := retry(ctx, r.cfg.RetryFor, r.logf, "claiming a chunk of "+job, func(ctx context.Context) (*client.Claim, error) {
			if dataid != "" {
				return r.clientFor(job).Claim(ctx, job, dataid, r.cfg.Executor)
			}
			return r.clientFor(job).FindNext(ctx, job, r.cfg.Executor)
		})
		if err != nil || claim != nil {
			r.next = (r.next + i + 1) % len(r.jobs)
			return claim, err
		}
	}
	return nil, nil
}

// supervise runs the command under one claim.
func (r *loop) supervise(ctx context.Context, claim client.Claim) (Outcome, error) {
	start := time.Now()
	r.logf("claimed %s %s (attempt %d, executor %s)", claim.Job, claim.DataID, claim.Attempt, claim.Executor)
	lease := r.leases[claim.Job]
	if lease <= 0 {
		lease = time.Until(claim.LeaseExpiresAt)
	}
	outcome, err := Run(ctx, retrying{r}, claim, Options{
		Command:   r.cfg.Command,
		Dir:       r.cfg.Dir,
		Env:       []string{"CHUNKLOCK_URL=" + r.cfg.URL},
		Stdout:    r.cfg.Stdout,
		Stderr:    r.cfg.Stderr,
		Heartbeat: lease / 3,
		KillGrace: r.cfg.KillGrace,
		IsStale:   func(err error) bool { return client.CodeOf(err) == backends.CodeStaleClaim },
		Logf:      r.logf,
		EnvAllow:  r.cfg.EnvAllow,
	})
	r.stats[outcome]++
	r.report(outcome, claim, time.Since(start).Round(time.Millisecond))
	var envErr *EnvError
	switch {
	case errors.As(err, &envErr):
		err = fmt.Errorf("%w; the claim on %s %s was failed with this reason and the job process not started: fix the job's env (`chunklock apply`)", err, claim.Job, claim.DataID)
	case err != nil:
		err = r.cfg.Explain(err)
	}
	return outcome, err
}

// afterFailure says what becomes of a failed claim's chunk: retried, or
// on HOLD when that was the job's last attempt.
func afterFailure(claim client.Claim, n int) string {
	switch {
	case n <= 0:
		return "it is retried while the job's maxAttempts allow"
	case claim.Attempt >= n:
		return fmt.Sprintf("attempt %d of %d, the last: the chunk is on HOLD until resubmitted", claim.Attempt, n)
	default:
		return fmt.Sprintf("attempt %d of %d: it is retried", claim.Attempt, n)
	}
}

// maxAttempts is job's maxAttempts as the server has it now (an apply may
// have changed it since the runner started), or as it was last read when
// the server does not answer within a second. Read on failures only: by
// report for a single claim, and once per job of a batch by the pool's
// endings, beside its loop (never on it: its heartbeats would wait).
func (r *loop) maxAttempts(job string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	j, err := r.cfg.Client.Job(ctx, job)
	r.triesMu.Lock()
	defer r.triesMu.Unlock()
	if err == nil {
		r.tries[job] = j.MaxAttempts
	}
	return r.tries[job]
}

// lastMaxAttempts is job's maxAttempts as last read, without asking.
func (r *loop) lastMaxAttempts(job string) int {
	r.triesMu.Lock()
	defer r.triesMu.Unlock()
	return r.tries[job]
}

// report logs how a claim ended; a failure's wording reads the job's
// maxAttempts from the server.
func (r *loop) report(outcome Outcome, claim client.Claim, took time.Duration) {
	tries := 0
	if outcome == Failed {
		tries = r.maxAttempts(claim.Job)
	}
	r.reportTries(outcome, claim, took, tries)
}

// reportTries is report with the job's maxAttempts given.
func (r *loop) reportTries(outcome Outcome, claim client.Claim, took time.Duration, tries int) {
	switch outcome {
	case Completed:
		r.logf("completed %s %s in %s", claim.Job, claim.DataID, took)
	case Failed:
		r.logf("failed %s %s after %s (%s)", claim.Job, claim.DataID, took, afterFailure(claim, tries))
	case Released:
		r.logf("released %s %s: the job process was stopped", claim.Job, claim.DataID)
	case Stale:
		r.logf("lost the claim on %s %s (expired or forced by an operator): nothing written for it", claim.Job, claim.DataID)
	}
}

// retrying is the Client of supervise: completions, failures and releases
// are retried while the server cannot be reached (heartbeats are retried by
// Run itself, until the lease passes).
type retrying struct{ r *loop }

func (c retrying) Heartbeat(ctx context.Context, token string) (time.Time, error) {
	return c.r.cfg.Client.Heartbeat(ctx, token)
}

func (c retrying) Complete(ctx context.Context, token string) error {
	return c.do(ctx, "completing the claim", func(ctx context.Context) error { return c.r.cfg.Client.Complete(ctx, token) })
}

func (c retrying) Fail(ctx context.Context, token, reason string) error {
	return c.do(ctx, "failing the claim", func(ctx context.Context) error { return c.r.cfg.Client.Fail(ctx, token, reason) })
}

func (c retrying) Release(ctx context.Context, token string) error {
	return c.do(ctx, "releasing the claim", func(ctx context.Context) error { return c.r.cfg.Client.Release(ctx, token) })
}

func (c retrying) do(ctx context.Context, what string, f func(context.Context) error) error {
	_, err := retry(ctx, c.r.cfg.RetryFor, c.r.logf, what, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
	return err
}
