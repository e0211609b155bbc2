package backends

import (
	"sync"
	"time"
)

// Clock tells the time. Leases, expiry and timestamps all read it, so tests
// can move time forward instead of sleeping.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now truncated to microseconds, the precision every store keeps.
func (SystemClock) Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// FakeClock is a settable clock for tests. The zero value starts at a fixed
// instant.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a clock standing at t.
func NewFakeClock(t time.Time) *FakeClock {
	return &FakeClock{now: t.UTC().Truncate(time.Microsecond)}
}

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		c.now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return c.now
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	now := c.Now()
	c.mu.Lock()
	c.now = now.Add(d).Truncate(time.Microsecond)
	c.mu.Unlock()
}
