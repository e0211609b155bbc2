package runner

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/chunklock/chunklock/client"
)

// backoff is an exponential backoff with jitter for transient errors.
type backoff struct {
	min, max time.Duration
	n        int
}

// next returns how long to wait before the next retry.
func (b *backoff) next() time.Duration {
	d := float64(b.min) * math.Pow(2, float64(b.n))
	if d > float64(b.max) {
		d = float64(b.max)
	} else {
		b.n++
	}
	// Full jitter between half and all of d, so that runners restarted
	// together do not retry in lockstep.
	return time.Duration(d/2 + rand.Float64()*d/2)
}

func (b *backoff) reset() { b.n = 0 }

// retry runs f until it succeeds, fails with an error that is not
// transient, or giveUp has passed since the first transient failure.
// Each transient failure is reported through logf.
func retry[T any](ctx context.Context, giveUp time.Duration, logf func(string, ...any), what string, f func(context.Context) (T, error)) (T, error) {
	b := backoff{min: 200 * time.Millisecond, max: 5 * time.Second}
	var first time.Time
	for {
		v, err := f(ctx)
		if err == nil || !client.IsTransient(err) {
			return v, err
		}
		if first.IsZero() {
			first = time.Now()
		}
		if time.Since(first) >= giveUp {
			return v, fmt.Errorf("runner: %s: still failing after %s: %w", what, giveUp.Round(time.Second), err)
		}
		wait := b.next()
		logf("%s: %v; retrying in %s", what, err, wait.Round(10*time.Millisecond))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return v, ctx.Err()
		}
	}
}
