package partition

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// skipZones are zones whose clocks do what clocks do: DST forward and back
// (New York, Berlin), half-hour DST (Lord Howe), a two-hour DST (Troll),
// DST switched off and on for Ramadan (Casablanca), a skipped day (Apia,
// Kwajalein), a half-hour offset (Kolkata, St Johns), none (UTC).
var skipZones = []string{"UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Antarctica/Troll",
	"Africa/Casablanca", "Pacific/Apia", "Pacific/Kwajalein", "Asia/Kolkata", "America/St_Johns"}

// TestSkipIsStep: skip lands where step does, from periods around the
// zones' transitions and elsewhere, forwards and backwards, over steps
// short and long.
func TestSkipIsStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 2))
	starts := []time.Time{
		time.Date(2011, 12, 29, 12, 0, 0, 0, time.UTC), // Apia skips 2011-12-30
		time.Date(1993, 8, 20, 0, 0, 0, 0, time.UTC),   // Kwajalein skips 1993-08-21
		time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC),
		time.Date(1945, 5, 24, 0, 0, 0, 0, time.UTC), // Berlin's double summer time
		time.Date(2024, 3, 10, 6, 0, 0, 0, time.UTC),
		time.Date(1890, 1, 1, 0, 0, 0, 0, time.UTC), // local mean times
		time.Date(2300, 6, 1, 0, 0, 0, 0, time.UTC), // rules past the zone's table
	}
	for _, zone := range skipZones {
		loc, err := loadLocation(zone)
		require.NoError(t, err)
		for _, kind := range []Kind{Hourly, Daily, Weekly, Monthly} {
			c := calendar{kind, loc}
			for _, at := range starts {
				base := c.containing(at.Unix())
				for range 12 {
					n := base + int64(rng.IntN(96)) - 48
					k := rng.IntN(2000) - 1000
					if rng.IntN(4) == 0 {
						k = rng.IntN(20) - 10
					}
					require.Equal(t, c.step(n, k), c.skip(n, k), "%s %s: step(%d, %d)", zone, kind, n, k)
				}
			}
		}
	}
}

// TestSkipCrossesYears: a step of 10,000 hours, or days, across the DST
// changes of every year between lands where step does.
func TestSkipCrossesYears(t *testing.T) {
	for _, zone := range []string{"America/New_York", "Pacific/Apia", "Australia/Lord_Howe"} {
		loc, err := loadLocation(zone)
		require.NoError(t, err)
		for _, kind := range []Kind{Hourly, Daily} {
			c := calendar{kind, loc}
			n := c.containing(time.Date(2005, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
			for _, k := range []int{10000, -10000, 8760, -8761} {
				require.Equal(t, c.step(n, k), c.skip(n, k), "%s %s: step(%d, %d)", zone, kind, n, k)
			}
		}
	}
}
