package backends

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetryAt(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name           string
		delay, limit   int
		attempt        int
		want           time.Duration
		wantZeroResult bool
	}{
		{name: "no delay", delay: 0, limit: 3600, attempt: 3, wantZeroResult: true},
		{name: "first attempt", delay: 10, limit: 3600, attempt: 1, want: 10 * time.Second},
		{name: "doubles", delay: 10, limit: 3600, attempt: 4, want: 80 * time.Second},
		{name: "capped", delay: 10, limit: 35, attempt: 3, want: 35 * time.Second},
		{name: "delay above the cap", delay: 100, limit: 35, attempt: 1, want: 35 * time.Second},
		{name: "default cap", delay: 1000, limit: 0, attempt: 5, want: time.Hour},
		{name: "huge attempt", delay: 1, limit: 3600, attempt: math.MaxInt, want: time.Hour},
		{name: "huge cap", delay: 1 << 40, limit: math.MaxInt, attempt: 200, want: time.Duration(math.MaxInt64/int64(time.Second)) * time.Second},
		{name: "attempt zero", delay: 10, limit: 3600, attempt: 0, want: 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RetryAt(Job{RetryDelaySeconds: tc.delay, RetryMaxDelaySeconds: tc.limit}, tc.attempt, at)
			if tc.wantZeroResult {
				require.True(t, got.IsZero())
				return
			}
			require.Equal(t, at.Add(tc.want), got)
		})
	}
}
