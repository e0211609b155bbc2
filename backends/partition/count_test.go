package partition

import (
	"math/rand/v2"
	"slices"
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

// TestCountInteger: an INTEGER definition's Count agrees with the length
// of its Range, and RangeDown with Range reversed, over spans at and near
// its bounds (0 and the largest uint64 included); Last is its end, or the
// largest uint64.
func TestCountInteger(t *testing.T) {
	defs := []Def{{Kind: Integer}, {Kind: Integer, Start: "5", End: "40"}, {Kind: Integer, Start: "18446744073709551600"}}
	spans := [][2]string{{"", ""}, {"", "30"}, {"0", "0"}, {"3", "9"}, {"38", "60"}, {"41", "50"}, {"7", "6"},
		{"18446744073709551610", ""}, {"18446744073709551600", "18446744073709551615"}}
	for _, d := range defs {
		for _, sp := range spans {
			n, err := d.Count(sp[0], sp[1])
			if sp == [2]string{} && d.End == "" && d.Start == "" {
				require.Error(t, err, "%+v %v: more than MaxInt64", d, sp)
				continue
			}
			require.NoError(t, err, "%+v %v", d, sp)
			up, err := d.Range(sp[0], sp[1])
			require.NoError(t, err)
			down, err := d.RangeDown(sp[0], sp[1])
			require.NoError(t, err)
			ups, downs := slices.Collect(up), slices.Collect(down)
			slices.Reverse(downs)
			require.Equal(t, ups, downs, "%+v %v", d, sp)
			require.EqualValues(t, len(ups), n, "%+v %v", d, sp)
		}
	}
	last, ok := Def{Kind: Integer, End: "40"}.Last()
	require.Equal(t, []any{"40", true}, []any{last, ok})
	last, ok = Def{Kind: Integer}.Last()
	require.Equal(t, []any{"18446744073709551615", true}, []any{last, ok})
}
