package partition

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scanned answers what the STATIC lookups answer, by scanning the values.
type scanned []string

func (s scanned) next(id string) (string, bool) {
	best := ""
	for _, v := range s {
		if CompareDataID(v, id) > 0 && (best == "" || CompareDataID(v, best) < 0) {
			best = v
		}
	}
	return best, best != ""
}

func (s scanned) prev(id string) (string, bool) {
	best := ""
	for _, v := range s {
		if CompareDataID(v, id) < 0 && (best == "" || CompareDataID(v, best) > 0) {
			best = v
		}
	}
	return best, best != ""
}

func (s scanned) between(from, to string) []string {
	var out []string
	for _, v := range s {
		if (from == "" || CompareDataID(v, from) >= 0) && (to == "" || CompareDataID(v, to) <= 0) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, CompareDataID)
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

// FuzzStaticLookups checks the STATIC lookups against a scan for arbitrary
// values (comma-separated, padded to more than smallStatic so the index
// answers) and probes. Run longer with
// `go test ./backends/partition -run '^$' -fuzz FuzzStaticLookups`.
func FuzzStaticLookups(f *testing.F) {
	f.Add("eu,us,apac", "eu", "b")
	f.Add("10,9,100,1", "5", "")
	f.Add("a:b,a.b,a=b,A", "a", "a.c")
	f.Fuzz(func(t *testing.T, list, id, from string) {
		seen := map[string]bool{}
		var values []string
		for _, v := range strings.Split(list, ",") {
			if validDataID(v) == nil && !seen[v] {
				seen[v] = true
				values = append(values, v)
			}
		}
		for i := 0; len(values) <= smallStatic; i++ {
			if v := fmt.Sprintf("pad%d", i); !seen[v] {
				seen[v] = true
				values = append(values, v)
			}
		}
		d := Def{Kind: Static, Values: values}
		s := scanned(values)
		if got := d.Contains(id); got != seen[id] {
			t.Fatalf("Contains(%q) = %v over %q", id, got, values)
		}
		next, ok := d.Next(id)
		if wantNext, wantOK := s.next(id); next != wantNext || ok != wantOK {
			t.Fatalf("Next(%q) = %q %v, a scan says %q %v", id, next, ok, wantNext, wantOK)
		}
		prev, ok := d.Prev(id)
		if wantPrev, wantOK := s.prev(id); prev != wantPrev || ok != wantOK {
			t.Fatalf("Prev(%q) = %q %v, a scan says %q %v", id, prev, ok, wantPrev, wantOK)
		}
		seq, err := d.Range(from, id)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := slices.Collect(seq), s.between(from, id); !slices.Equal(got, want) {
			t.Fatalf("Range(%q, %q) = %q, a scan says %q", from, id, got, want)
		}
	})
}
