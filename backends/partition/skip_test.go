package partition

import (
	"math/rand/v2"
	"slices"
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
		z, err := loadZone(zone)
		require.NoError(t, err)
		for _, kind := range []Kind{Hourly, Daily, Weekly, Monthly} {
			c := calendar{kind, z}
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
		z, err := loadZone(zone)
		require.NoError(t, err)
		for _, kind := range []Kind{Hourly, Daily} {
			c := calendar{kind, z}
			n := c.containing(time.Date(2005, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
			for _, k := range []int{10000, -10000, 8760, -8761} {
				require.Equal(t, c.step(n, k), c.skip(n, k), "%s %s: step(%d, %d)", zone, kind, n, k)
			}
		}
	}
}

// TestRangeDownIsRangeReversed: walking down yields what Range yields, in
// the other order, skipped hours and the definition's ends included.
func TestRangeDownIsRangeReversed(t *testing.T) {
	for _, tc := range []struct {
		def      Def
		from, to string
	}{
		{Def{Kind: Hourly, Start: "2026-03-28T20", End: "2026-03-29T06", Timezone: "Europe/Berlin"}, "", ""},
		{Def{Kind: Hourly, Start: "2026-03-28T20", End: "2026-03-29T06", Timezone: "Europe/Berlin"}, "2026-03-29T01", "2026-03-29T03"},
		{Def{Kind: Daily, Start: "2011-12-25", Timezone: "Pacific/Apia"}, "", "2012-01-05"},
		{Def{Kind: Daily, Start: "2011-12-25", Timezone: "Pacific/Apia"}, "2011-12-30", "2011-12-30"},
		{Def{Kind: Monthly, Start: "2025-11"}, "2025-01", "2026-03"},
	} {
		up, err := tc.def.Range(tc.from, tc.to)
		require.NoError(t, err)
		down, err := tc.def.RangeDown(tc.from, tc.to)
		require.NoError(t, err)
		want := slices.Collect(up)
		slices.Reverse(want)
		require.Equal(t, want, slices.Collect(down), "%v [%s, %s]", tc.def, tc.from, tc.to)
	}
	_, err := Def{Kind: Static, Values: []string{"a"}}.RangeDown("", "")
	require.Error(t, err)
}
