package partition

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCountIsRangeLength: Count answers how many dataids Range yields, in
// zones whose clocks skip hours and days, for every time kind, over spans
// around the zones' transitions and across years, and Last is the last
// dataid Range yields for a definition with an end.
func TestCountIsRangeLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 3))
	starts := map[Kind][]string{
		Hourly:  {"2011-12-29T00", "1993-08-20T00", "2026-03-28T00", "2026-10-24T00", "1945-05-20T00", "1890-01-01T00"},
		Daily:   {"2011-12-01", "1993-08-01", "2026-03-01", "1945-01-01", "1890-01-01"},
		Weekly:  {"2011-W48", "1993-W30", "2026-W10"},
		Monthly: {"2011-10", "1993-01", "2026-01"},
	}
	for _, zone := range skipZones {
		for kind, froms := range starts {
			for _, start := range froms {
				d := Def{Kind: kind, Start: start, Timezone: zone}
				for range 4 {
					span := rng.IntN(5000)
					if rng.IntN(4) == 0 {
						span = rng.IntN(100)
					}
					n, err := parsePeriod(kind, start)
					require.NoError(t, err)
					end, ok := formatPeriod(kind, n+int64(span))
					require.True(t, ok)
					ids, err := d.Range(start, end)
					require.NoError(t, err)
					want := int64(0)
					last := ""
					for id := range ids {
						want++
						last = id
					}
					got, err := d.Count(start, end)
					require.NoError(t, err)
					require.Equal(t, want, got, "%s %s from %s to %s", zone, kind, start, end)

					bounded := Def{Kind: kind, Start: start, End: end, Timezone: zone}
					if bounded.Validate() == nil && last != "" {
						l, ok := bounded.Last()
						require.True(t, ok)
						require.Equal(t, last, l, "%s %s ending %s", zone, kind, end)
					}
				}
			}
		}
	}
	_, err := Def{Kind: Static, Values: []string{"a"}}.Count("", "")
	require.ErrorIs(t, err, ErrInvalid)
	got, err := Def{Kind: Daily, Start: "2026-01-10"}.Count("2026-01-11", "2026-01-10")
	require.NoError(t, err)
	require.Zero(t, got)
}
