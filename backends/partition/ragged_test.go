package partition

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// raggedProduct lists the expected tuples of a definition whose first
// dimension is of time beside DYNAMIC ones by brute force: every tuple of
// the time dimension's dataids (its one-dimensional Range) and each inner
// dimension's values, kept when every DYNAMIC value's since lies before the
// end of the tuple's window, sorted as tuples.
func raggedProduct(t *testing.T, d Def, upTo string) []string {
	t.Helper()
	timeDim := d.Dimensions[0].Def
	seq, err := timeDim.Range("", upTo)
	require.NoError(t, err)
	var out []string
	for head := range seq {
		_, end, err := timeDim.Window(head)
		require.NoError(t, err)
		rows := [][]string{{head}}
		for _, dim := range d.Dimensions[1:] {
			var vals []string
			if dim.Kind == Dynamic {
				for _, m := range dim.Members {
					if m.Since < end.Unix() {
						vals = append(vals, m.Value)
					}
				}
			} else {
				s, err := dim.Def.Range("", "")
				require.NoError(t, err)
				for v := range s {
					vals = append(vals, v)
				}
			}
			var next [][]string
			for _, r := range rows {
				for _, v := range vals {
					next = append(next, append(slices.Clone(r), v))
				}
			}
			rows = next
		}
		for _, r := range rows {
			out = append(out, strings.Join(r, "|"))
		}
	}
	slices.SortFunc(out, CompareDataID)
	return out
}

func unix(s string) int64 {
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return at.Unix()
}

// A time dimension beside DYNAMIC ones expects each value from the window
// holding its since: Range, RangeDown, Next, Prev, Contains, Count, Back,
// DueBefore and Last agree with the ragged product listed by brute force,
// over days, over hours across the hour Paris skips and the one it
// repeats, with the DYNAMIC dimension before and after a STATIC one, two
// DYNAMIC dimensions, values expected from before the start, and values
// whose since is still to come.
func TestDynamicDimensionsAgreeWithTheRaggedProduct(t *testing.T) {
	regions := Def{Kind: Static, Values: []string{"us", "eu"}}
	customers := Def{Kind: Dynamic, Members: []Member{
		{Value: "acme", Since: unix("2026-11-09T10:00:00Z")},
		{Value: "zeta", Since: 0}, // from the start
		{Value: "b", Since: unix("2026-11-11T00:00:00Z")},
		{Value: "cc", Since: unix("2026-11-09T23:59:59Z")},
		{Value: "late", Since: unix("2026-11-30T00:00:00Z")}, // after the end
	}}
	shops := Def{Kind: Dynamic, Members: []Member{
		{Value: "s1", Since: unix("2026-11-10T00:00:00Z")},
		{Value: "s2", Since: unix("2026-11-08T12:00:00Z")},
	}}
	parisHours := Def{Kind: Dynamic, Members: []Member{
		{Value: "a", Since: unix("2026-03-29T00:30:00Z")}, // 02:30 Paris is skipped: 03:00 is its window's start
		{Value: "b", Since: unix("2026-10-25T00:30:00Z")}, // in the repeated hour
		{Value: "c", Since: 0},
	}}
	days := Def{Kind: Daily, Start: "2026-11-08", End: "2026-11-13"}
	for _, c := range []struct {
		name string
		d    Def
	}{
		{"date x customer", dims(0, nil, dim("date", days), dim("customer", customers))},
		{"date x region x customer", dims(0, nil, dim("date", days), dim("region", regions), dim("customer", customers))},
		{"date x customer x region", dims(0, nil, dim("date", days), dim("customer", customers), dim("region", regions))},
		{"date x customer x shop", dims(0, nil, dim("date", days), dim("customer", customers), dim("shop", shops))},
		{"unbounded days", dims(0, nil, dim("date", Def{Kind: Daily, Start: "2026-11-08"}), dim("customer", customers))},
		{"Paris spring", dims(0, nil, dim("hour", Def{Kind: Hourly, Start: "2026-03-28T22", End: "2026-03-29T06", Timezone: "Europe/Paris"}), dim("c", parisHours))},
		{"Paris autumn", dims(0, nil, dim("hour", Def{Kind: Hourly, Start: "2026-10-24T23", End: "2026-10-25T05", Timezone: "Europe/Paris"}), dim("c", parisHours))},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := c.d
			require.NoError(t, d.ValidateNew())
			upTo := ""
			if !d.Bounded() {
				upTo = "2026-11-20"
			}
			all := raggedProduct(t, d, upTo)
			require.NotEmpty(t, all)
			if d.Bounded() {
				require.Equal(t, all, walkTuples(t, d, "", "", false))
				down := walkTuples(t, d, "", "", true)
				slices.Reverse(down)
				require.Equal(t, all, down)
				last, ok := d.Last()
				require.True(t, ok)
				require.Equal(t, all[len(all)-1], last)
			} else {
				require.Equal(t, all, walkTuples(t, d, "", upTo, false))
			}
			first, ok := d.First()
			require.True(t, ok)
			require.Equal(t, all[0], first)

			// Probes: every tuple, the values at every period they are
			// not expected at, and dataids around them.
			probes := slices.Clone(all)
			heads := map[string]bool{}
			for _, id := range all {
				head, _, _ := strings.Cut(id, "|")
				heads[head] = true
			}
			for head := range heads {
				for _, id := range all {
					_, rest, _ := strings.Cut(id, "|")
					probes = append(probes, head+"|"+rest, head+"|"+rest+"x")
				}
				probes = append(probes, head+"|"+strings.Repeat("|a", len(d.Dimensions)-1)[1:])
			}
			before := "2026-11-07"
			if d.Dimensions[0].Kind == Hourly {
				before = d.Dimensions[0].Start[:11] + "00"
			}
			probes = append(probes, before+"|"+strings.Repeat("zz|", len(d.Dimensions)-2)+"zz")
			for _, p := range probes {
				i, found := slices.BinarySearchFunc(all, p, CompareDataID)
				require.Equal(t, found, d.Contains(p), "Contains(%q)", p)
				j := i
				if found {
					j++
				}
				next, ok := d.Next(p)
				if d.Bounded() || j < len(all) {
					require.Equal(t, j < len(all), ok, "Next(%q)", p)
					if ok {
						require.Equal(t, all[j], next, "Next(%q)", p)
					}
				}
				prev, ok := d.Prev(p)
				require.Equal(t, i > 0, ok, "Prev(%q)", p)
				if ok {
					require.Equal(t, all[i-1], prev, "Prev(%q)", p)
				}
			}
			// Count and Back agree with the listing.
			for i, a := range all {
				for j := i; j < len(all); j += 1 + len(all)/40 {
					n, err := d.Count(a, all[j])
					require.NoError(t, err)
					require.Equal(t, int64(j-i+1), n, "Count(%q, %q)", a, all[j])
				}
				for _, k := range []int{0, 1, 2, 3, 7, i, i + 5} {
					back, ok := d.Back(a, k)
					require.True(t, ok, "Back(%q, %d)", a, k)
					require.Equal(t, all[max(i-k, 0)], back, "Back(%q, %d)", a, k)
				}
			}
			for head := range heads {
				var want []string
				for _, id := range all {
					if h, _, _ := strings.Cut(id, "|"); h == head {
						want = append(want, id)
					}
				}
				require.Equal(t, want, walkTuples(t, d, head, head, false), "Range(%q, %q)", head, head)
				n, err := d.Count(head, head)
				require.NoError(t, err)
				require.Equal(t, int64(len(want)), n, "Count(%q, %q)", head, head)
				n, err = d.Count("", head)
				require.NoError(t, err)
				k, _ := slices.BinarySearchFunc(all, want[len(want)-1], CompareDataID)
				require.Equal(t, int64(k+1), n, "Count(\"\", %q)", head)
			}
			// Due: every tuple up to the last due window's last tuple.
			timeDim := d.Dimensions[0].Def
			for _, id := range all[:len(all):len(all)] {
				head, _, _ := strings.Cut(id, "|")
				_, end, err := timeDim.Window(head)
				require.NoError(t, err)
				last, ok := d.DueBefore(end)
				require.True(t, ok)
				k, _ := slices.BinarySearchFunc(all, last, CompareDataID)
				require.Equal(t, last, all[k])
				h, _, _ := strings.Cut(last, "|")
				require.Equal(t, head, h, "DueBefore(end of %q)", head)
				if k+1 < len(all) {
					nh, _, _ := strings.Cut(all[k+1], "|")
					require.NotEqual(t, head, nh)
				}
			}
			_, ok = d.DueBefore(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
			require.False(t, ok)
		})
	}
}

// A DYNAMIC dimension without values expects nothing; one without a time
// dimension beside it expects every value at once, as a STATIC one.
func TestDynamicDimensionsEmptyAndUntimed(t *testing.T) {
	days := Def{Kind: Daily, Start: "2026-11-08", End: "2026-11-10"}
	d := dims(0, nil, dim("date", days), dim("customer", Def{Kind: Dynamic}))
	require.NoError(t, d.ValidateNew())
	require.Empty(t, walkTuples(t, d, "", "", false))
	_, ok := d.First()
	require.False(t, ok)
	_, ok = d.DueBefore(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	require.False(t, ok)
	n, err := d.Count("", "")
	require.NoError(t, err)
	require.Zero(t, n)
	require.False(t, d.Contains("2026-11-08|a"))

	u := dims(0, nil, dim("customer", Def{Kind: Dynamic, Members: []Member{{Value: "b"}, {Value: "a"}}}), dim("region", Def{Kind: Static, Values: []string{"eu", "us"}}))
	require.NoError(t, u.ValidateNew())
	require.Equal(t, []string{"a|eu", "a|us", "b|eu", "b|us"}, walkTuples(t, u, "", "", false))
	require.True(t, u.Bounded())
	n, err = u.Count("", "")
	require.NoError(t, err)
	require.Equal(t, int64(4), n)
	last, ok := u.DueBefore(time.Now())
	require.True(t, ok)
	require.Equal(t, "b|us", last)

	// A slice of a DYNAMIC dimension keeps each value's since.
	c := dims(0, nil, dim("date", days), dim("customer", Def{Kind: Dynamic, Members: []Member{
		{Value: "a", Since: unix("2026-11-09T12:00:00Z")}, {Value: "b"}, {Value: "c"}}}))
	s, ok, err := c.Sliced([]Slice{{Dimension: "customer", Values: []string{"a", "c", "nope"}}})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{"2026-11-08|c", "2026-11-09|a", "2026-11-09|c", "2026-11-10|a", "2026-11-10|c"}, walkTuples(t, s, "", "", false))
}

// Counting ten years of days beside 1,000 customers added over the years
// is arithmetic over the segments their since values cut, not a walk.
func TestDynamicDimensionsCountAtSize(t *testing.T) {
	members := make([]Member, 1000)
	start := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)
	want := int64(0)
	end := time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC)
	for i := range members {
		since := start.AddDate(0, 0, i*3)
		members[i] = Member{Value: strings.Repeat("c", 1+i%5) + string(rune('a'+i%26)) + strconvI(i), Since: since.Unix()}
		want += int64(end.Sub(since).Hours()/24) + 1
	}
	d := dims(0, nil, dim("date", Def{Kind: Daily, Start: "2016-01-01", End: "2025-12-31"}), dim("customer", Def{Kind: Dynamic, Members: members}))
	require.NoError(t, d.ValidateNew())
	n, err := d.Count("", "")
	require.NoError(t, err)
	require.Equal(t, want, n)
	last, ok := d.Last()
	require.True(t, ok)
	back, ok := d.Back(last, int(want-1))
	require.True(t, ok)
	first, _ := d.First()
	require.Equal(t, first, back)
	// Back and Count invert each other anywhere in the middle.
	for _, k := range []int{1, 999, 1000, 123457, 1000000} {
		at, ok := d.Back(last, k)
		require.True(t, ok)
		n, err := d.Count(at, last)
		require.NoError(t, err)
		require.Equal(t, int64(k+1), n, "Back(last, %d) = %q", k, at)
	}
}

func strconvI(i int) string {
	return strings.TrimLeft(time.Duration(i).String(), "") // "123ns"
}

// TestRaggedCacheLetsDefinitionsGo: every add of values makes a new
// definition, so a dimension's ragged arithmetic is cached under a weak
// pointer to its members; a definition no longer used must let its entry
// go (the entry must not hold the members itself).
func TestRaggedCacheLetsDefinitionsGo(t *testing.T) {
	days := Def{Kind: Daily, Start: "2020-01-01", End: "2025-12-31"}
	alive := func() int {
		n := 0
		raggeds.Range(func(k, _ any) bool {
			if k.(raggedKey).members[1].Value() != nil {
				n++
			}
			return true
		})
		return n
	}
	before := alive()
	for round := range 20 {
		members := make([]Member, 100)
		for i := range members {
			members[i] = Member{Value: fmt.Sprintf("c%03d-%d", i, round), Since: int64(1577836800 + 86400*i)}
		}
		d := dims(0, nil, dim("date", days), dim("customer", Def{Kind: Dynamic, Members: members}))
		if _, err := d.Count("", ""); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.GC()
	if n := alive() - before; n > 2 {
		t.Fatalf("%d cached ragged products of 20 definitions no longer used are still alive: the cache keeps their members", n)
	}
}
