package postgres

import (
	"context"
	"sync/atomic"
	"time"
)

// clockRefresh is how often the database clock re-measures its offset.
const clockRefresh = 30 * time.Second

// dbClock is the database's clock without a round trip per reading: the
// local clock plus an offset measured against the database's
// clock_timestamp() at Open and refreshed in the background, so that every
// replica computes leases on the same time base within milliseconds.
type dbClock struct {
	offset atomic.Int64 // nanoseconds to add to the local clock
}

// Now returns the estimated database time, truncated to microseconds.
func (c *dbClock) Now() time.Time {
	return time.Now().Add(time.Duration(c.offset.Load())).UTC().Truncate(time.Microsecond)
}

// newDBClock measures the offset once (failing Open if the database does
// not answer) and keeps it fresh until b closes.
func newDBClock(ctx context.Context, b *Backend) (*dbClock, error) {
	c := &dbClock{}
	off, err := measureOffset(ctx, b)
	if err != nil {
		return nil, err
	}
	c.offset.Store(int64(off))
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := time.NewTicker(clockRefresh)
		defer t.Stop()
		for {
			select {
			case <-b.ctx.Done():
				return
			case <-t.C:
				mctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
				if off, err := measureOffset(mctx, b); err == nil {
					c.offset.Store(int64(off))
				} // else keep the last offset: clocks drift slowly
				cancel()
			}
		}
	}()
	return c, nil
}

// measureOffset samples the database clock a few times and keeps the
// sample with the shortest round trip, assuming the database read its
// clock half-way through it.
func measureOffset(ctx context.Context, b *Backend) (time.Duration, error) {
	var best, bestRTT time.Duration = 0, -1
	for range 3 {
		t0 := time.Now()
		dbNow, err := b.q.DatabaseNow(ctx)
		if err != nil {
			return 0, mapErr(err, "reading the database clock")
		}
		rtt := time.Since(t0)
		if bestRTT < 0 || rtt < bestRTT {
			best, bestRTT = dbNow.Sub(t0.Add(rtt/2)), rtt
		}
	}
	return best, nil
}
