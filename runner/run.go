package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/client"
)

// Client is what Run needs from a chunklock server.
type Client interface {
	// Heartbeat extends the claim's lease and returns its new end.
	Heartbeat(ctx context.Context, token string) (time.Time, error)
	Complete(ctx context.Context, token string) error
	Fail(ctx context.Context, token, reason string) error
	Release(ctx context.Context, token string) error
}

// Outcome is how a supervised claim ended.
type Outcome int

const (
	// Completed: the process exited 0 and the chunk is READY.
	Completed Outcome = iota
	// Failed: the process exited non-zero (or could not start) and the claim was failed.
	Failed
	// Released: the runner was asked to stop; the process was stopped and the claim given back.
	Released
	// Stale: the claim stopped being this runner's (revoked, expired, or
	// unreachable past its lease); the process was stopped and nothing was written.
	Stale
)

func (o Outcome) String() string {
	return [...]string{"completed", "failed", "released", "stale"}[o]
}

// Options configure Run.
type Options struct {
	// Command is the job process and its arguments.
	Command []string
	// Dir is the working directory of the process ("" = current).
	Dir string
	// Env holds extra NAME=value variables for the process, added after the
	// runner's own environment and before the claim's (which wins).
	Env []string
	// Stdout and Stderr receive the process's output (default: ours).
	Stdout, Stderr io.Writer
	// Heartbeat is the heartbeat interval; default a third of the lease left.
	Heartbeat time.Duration
	// KillGrace is how long the process gets between SIGTERM and SIGKILL.
	KillGrace time.Duration
	// TailBytes bounds the stderr tail sent as the failure reason.
	TailBytes int
	// IsStale tells whether an error from the server means the claim is no
	// longer live (STALE_CLAIM); other errors are retried.
	IsStale func(error) bool
	// Logf reports what the runner does (default: discard).
	Logf func(format string, args ...any)
	// Now is the clock (default time.Now).
	Now func() time.Time
	// EnvAllow lists the job env names this runner admits although
	// envname's rule refuses them (the operator's, never the server's).
	EnvAllow envname.Allow
}

func (o *Options) defaults(c client.Claim, now time.Time) {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = c.LeaseExpiresAt.Sub(now) / 3
		if o.Heartbeat < 100*time.Millisecond {
			o.Heartbeat = 100 * time.Millisecond
		}
	}
	if o.KillGrace <= 0 {
		o.KillGrace = 10 * time.Second
	}
	if o.TailBytes <= 0 {
		o.TailBytes = 2048
	}
	if o.IsStale == nil {
		o.IsStale = func(error) bool { return false }
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Run starts the job process for claim with the claim in its environment,
// heartbeats while it runs, and ends the claim by how it exits: exit 0
// completes, anything else fails with the tail of its stderr as the reason.
// If the claim goes stale the process is stopped at once (SIGTERM, then
// SIGKILL after KillGrace) and nothing more is written. If ctx is cancelled
// (the runner is told to stop) the process is stopped and the claim
// released. The process runs in its own process group, and signals go to
// the whole group. On Linux, should the runner itself die (kill -9), the
// process is killed with it (not its own children, which keep the process
// group); the claim then expires after its lease and the chunk is redone.
//
// A claim whose job env names a variable the runner refuses (see CheckEnv)
// is failed without starting the process, with the *EnvError, which names
// each variable and why, as the reason: operators
// see it in the chunk's status, and the chunk goes on HOLD once the job's
// maxAttempts are used rather than being claimed again and again as a
// released one would. Run returns Failed and that *EnvError.
func Run(ctx context.Context, c Client, claim client.Claim, opt Options) (Outcome, error) {
	if len(opt.Command) == 0 {
		return Failed, errors.New("runner: no command to run")
	}
	opt.defaults(claim, time.Now())
	if err := CheckEnv(claim, opt.EnvAllow); err != nil {
		return failUnstarted(ctx, c, claim, opt, err)
	}
	// Writes after the outcome is known use their own context: a runner
	// told to stop must still release its claim.
	finish := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	}
	p, err := startProc(claim, opt)
	if err != nil {
		return failUnstarted(ctx, c, claim, opt, err)
	}
	opt.Logf("started %s for %s/%s (pid %d, attempt %d)", opt.Command[0], claim.Job, claim.DataID, p.pid(), claim.Attempt)
	stop := func(why string) error { return p.stop(opt.KillGrace, opt.Logf, why) }

	lease := claim.LeaseExpiresAt
	ticker := time.NewTicker(opt.Heartbeat)
	defer ticker.Stop()
	for {
		select {
		case <-p.done:
			err := p.err
			fctx, cancel := finish()
			defer cancel()
			if err == nil {
				if cerr := c.Complete(fctx, claim.Token); cerr != nil {
					if opt.IsStale(cerr) {
						opt.Logf("process succeeded but the claim was no longer ours: %v", cerr)
						return Stale, nil
					}
					return Failed, fmt.Errorf("runner: process succeeded but completing the claim failed: %w", cerr)
				}
				return Completed, nil
			}
			if ferr := c.Fail(fctx, claim.Token, p.reason()); ferr != nil {
				if opt.IsStale(ferr) {
					return Stale, nil
				}
				return Failed, fmt.Errorf("runner: failing the claim: %w", ferr)
			}
			return Failed, nil
		case <-ctx.Done():
			_ = stop("runner is stopping")
			fctx, cancel := finish()
			defer cancel()
			if err := c.Release(fctx, claim.Token); err != nil && !opt.IsStale(err) {
				return Released, fmt.Errorf("runner: releasing the claim: %w", err)
			}
			return Released, nil
		case <-ticker.C:
			hctx, cancel := context.WithTimeout(ctx, opt.Heartbeat)
			until, err := c.Heartbeat(hctx, claim.Token)
			cancel()
			switch {
			case err == nil:
				lease = until
			case opt.IsStale(err):
				_ = stop("claim is no longer ours: " + err.Error())
				return Stale, nil
			case ctx.Err() != nil:
				// The runner is stopping; the next loop turn releases.
			default:
				opt.Logf("heartbeat failed (will retry): %v", err)
				if !opt.Now().Before(lease) {
					_ = stop("lease passed without a successful heartbeat")
					return Stale, nil
				}
			}
		}
	}
}

// failUnstarted fails the claim of a process that was not started, with
// cause as the reason, and returns Failed and cause.
func failUnstarted(ctx context.Context, c Client, claim client.Claim, opt Options, cause error) (Outcome, error) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if ferr := c.Fail(fctx, claim.Token, cause.Error()); ferr != nil && !opt.IsStale(ferr) {
		return Failed, fmt.Errorf("%w; and failing the claim failed too: %w", cause, ferr)
	}
	return Failed, cause
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
