package partition

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scanned answers what the STATIC lookups answer, by scanning the values.
type scanned []string

func (s scanned) next(id string) (string, bool) {
	best := ""
	for _, v := range s {
		if compareDataID(v, id) > 0 && (best == "" || compareDataID(v, best) < 0) {
			best = v
		}
	}
	return best, best != ""
}

func (s scanned) prev(id string) (string, bool) {
	best := ""
	for _, v := range s {
		if compareDataID(v, id) < 0 && (best == "" || compareDataID(v, best) > 0) {
			best = v
		}
	}
	return best, best != ""
}

func (s scanned) between(from, to string) []string {
	var out []string
	for _, v := range s {
		if (from == "" || compareDataID(v, from) >= 0) && (to == "" || compareDataID(v, to) <= 0) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, compareDataID)
	return out
}

// TestStaticLookupsMatchAScan: Contains, Next, Prev, Range and DueBefore
// of STATIC definitions small and large (indexed) answer what a scan of
// the values answers, for values and for ids between and around them; two
// definitions with as many values but other ones never share an index.
func TestStaticLookupsMatchAScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, smallStatic, smallStatic + 1, 300, MaxStaticValues} {
		for _, prefix := range []string{"a", "b"} {
			values := make([]string, n)
			for i, k := range rng.Perm(n) {
				values[i] = fmt.Sprintf("%s%d", prefix, 2*k+1) // odd numbers, in random order
			}
			d := Def{Kind: Static, Values: values}
			require.NoError(t, d.Validate())
			s := scanned(values)
			probes := []string{"a", "b", "a0", "b0", prefix + "1", prefix + fmt.Sprint(2*n-1), prefix + fmt.Sprint(2*n), "zz"}
			for range 200 {
				probes = append(probes, fmt.Sprintf("%s%d", prefix, rng.IntN(2*n+2)))
			}
			for _, id := range probes {
				require.Equal(t, slices.Contains(values, id), d.Contains(id), "n=%d Contains(%s)", n, id)
				next, ok := d.Next(id)
				wantNext, wantOK := s.next(id)
				require.Equal(t, [2]any{wantNext, wantOK}, [2]any{next, ok}, "n=%d Next(%s)", n, id)
				prev, ok := d.Prev(id)
				wantPrev, wantOK := s.prev(id)
				require.Equal(t, [2]any{wantPrev, wantOK}, [2]any{prev, ok}, "n=%d Prev(%s)", n, id)
			}
			for range 20 {
				from, to := probes[rng.IntN(len(probes))], probes[rng.IntN(len(probes))]
				for _, span := range [][2]string{{from, to}, {"", to}, {from, ""}, {"", ""}} {
					seq, err := d.Range(span[0], span[1])
					require.NoError(t, err)
					require.Equal(t, s.between(span[0], span[1]), slices.Collect(seq), "n=%d Range(%q, %q)", n, span[0], span[1])
				}
			}
			last, ok := d.DueBefore(time.Now())
			require.True(t, ok)
			require.Equal(t, s.between("", "")[n-1], last, "n=%d DueBefore", n)
		}
	}
}
