package partition

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func dims(lag time.Duration, deadline *time.Duration, ds ...Dimension) Def {
	return Def{Kind: Dimensional, Dimensions: ds, Lag: lag, Deadline: deadline}
}

func dim(name string, d Def) Dimension { return Dimension{Name: name, Def: d} }

// product lists the expected tuples of d by brute force: every
// combination of each dimension's listed values, sorted as tuples.
func product(t *testing.T, d Def, lists ...[]string) []string {
	t.Helper()
	out := []string{""}
	for _, l := range lists {
		var next []string
		for _, p := range out {
			for _, v := range l {
				if p == "" {
					next = append(next, v)
				} else {
					next = append(next, p+"|"+v)
				}
			}
		}
		out = next
	}
	slices.SortFunc(out, CompareDataID)
	return out
}

func walkTuples(t *testing.T, d Def, from, to string, down bool) []string {
	t.Helper()
	var seq func(yield func(string) bool)
	var err error
	if down {
		seq, err = d.RangeDown(from, to)
	} else {
		seq, err = d.Range(from, to)
	}
	require.NoError(t, err)
	var ids []string
	for id := range seq {
		ids = append(ids, id)
	}
	return ids
}

// The methods of a multi-dimensional definition agree with the cross
// product of its dimensions' dataids sorted as tuples: Range and RangeDown
// over every pair of bounds (tuples and first values, expected or not),
// Next and Prev from every tuple and from between them, Contains.
func TestDimensionsAgreeWithTheProduct(t *testing.T) {
	days := Def{Kind: Daily, Start: "2026-11-08", End: "2026-11-11"}
	regions := Def{Kind: Static, Values: []string{"us", "eu", "emea"}}
	shards := Def{Kind: Integer, Start: "8", End: "11"}
	d := dims(0, nil, dim("date", days), dim("region", regions), dim("shard", shards))
	require.NoError(t, d.ValidateNew())
	all := product(t, d, []string{"2026-11-08", "2026-11-09", "2026-11-10", "2026-11-11"}, []string{"eu", "us", "emea"},
		[]string{"8", "9", "10", "11"})
	require.Equal(t, all, walkTuples(t, d, "", "", false))
	require.Equal(t, "2026-11-08|eu|8", all[0])
	require.Equal(t, "2026-11-08|eu|9", all[1])
	require.Equal(t, "2026-11-08|eu|10", all[2], "values order shortlex within a dimension")
	require.Equal(t, "2026-11-08|us|8", all[4])
	down := walkTuples(t, d, "", "", true)
	slices.Reverse(down)
	require.Equal(t, all, down)

	// Probes: every tuple, plus dataids between and around them.
	probes := slices.Clone(all)
	probes = append(probes, "2026-11-07|eu|8", "2026-11-09|zz|8", "2026-11-09|eu|12", "2026-11-09|a|8",
		"2026-11-12|eu|8", "2026-11-09|eu|7", "2026-11-09|fr|9", "2026-11-09|eu|99")
	for _, p := range probes {
		i, found := slices.BinarySearchFunc(all, p, CompareDataID)
		require.Equal(t, found, d.Contains(p), "Contains(%q)", p)
		j := i
		if found {
			j++
		}
		next, ok := d.Next(p)
		require.Equal(t, j < len(all), ok, "Next(%q)", p)
		if ok {
			require.Equal(t, all[j], next, "Next(%q)", p)
		}
		prev, ok := d.Prev(p)
		require.Equal(t, i > 0, ok, "Prev(%q)", p)
		if ok {
			require.Equal(t, all[i-1], prev, "Prev(%q)", p)
		}
	}
	for _, lo := range append(probes[:0:0], "", "2026-11-09", "2026-11-09|us|9", "2026-11-09|zz|8", "2026-11-07") {
		for _, hi := range []string{"", "2026-11-10", "2026-11-10|eu|10", "2026-11-10|a|1", "2026-11-12"} {
			var want []string
			for _, id := range all {
				if (lo == "" || cmpBound(id, lo, false) >= 0) && (hi == "" || cmpBound(id, hi, true) <= 0) {
					want = append(want, id)
				}
			}
			require.Equal(t, want, walkTuples(t, d, lo, hi, false), "Range(%q, %q)", lo, hi)
			got := walkTuples(t, d, lo, hi, true)
			slices.Reverse(got)
			require.Equal(t, want, got, "RangeDown(%q, %q)", lo, hi)
		}
	}
	for _, bad := range []string{"2026-11-09", "2026-11-09|eu", "2026-11-09|eu|8|x", "eu|2026-11-09|8", "2026-11-09|eu|08", ""} {
		require.False(t, d.Contains(bad), "%q", bad)
	}
	last, ok := d.Last()
	require.True(t, ok)
	require.Equal(t, all[len(all)-1], last)
	_, err := d.Range("2026-11-09|eu", "")
	require.ErrorIs(t, err, ErrInvalid, "a bound is a first value or a whole tuple")
}

// cmpBound compares a tuple with a range bound: a first value alone bounds
// the tuples it begins (all of them, at either end).
func cmpBound(id, bound string, upper bool) int {
	if strings.Contains(bound, "|") {
		return CompareDataID(id, bound)
	}
	head, _, _ := strings.Cut(id, "|")
	return CompareDataID(head, bound)
}

// The time dimension gives a tuple its window, due time and lateness; the
// due tuples are those up to the last due window's last tuple.
func TestDimensionsWindowDueLate(t *testing.T) {
	deadline := 2 * time.Hour
	d := dims(time.Hour, &deadline, dim("hour", Def{Kind: Hourly, Start: "2026-11-22T00", Timezone: "Europe/Paris"}),
		dim("region", Def{Kind: Static, Values: []string{"eu", "us"}}))
	require.NoError(t, d.ValidateNew())
	require.True(t, d.Contains("2026-11-22T05|us"))
	start, end, err := d.Window("2026-11-22T05|us")
	require.NoError(t, err)
	paris, _ := time.LoadLocation("Europe/Paris")
	require.Equal(t, time.Date(2026, 11, 22, 5, 0, 0, 0, paris).Unix(), start.Unix())
	require.Equal(t, time.Hour, end.Sub(start))
	due, err := d.Due("2026-11-22T05|us")
	require.NoError(t, err)
	require.Equal(t, end.Add(time.Hour).Unix(), due.Unix())
	late, err := d.Late("2026-11-22T05|us", end.Add(2*time.Hour), false)
	require.NoError(t, err)
	require.True(t, late)
	late, err = d.Late("2026-11-22T05|us", end.Add(2*time.Hour-time.Second), false)
	require.NoError(t, err)
	require.False(t, late)
	// At 09:30 Paris with an hour's lag, 07:00-08:00 is the last window due.
	last, ok := d.DueBefore(time.Date(2026, 11, 22, 9, 30, 0, 0, paris))
	require.True(t, ok)
	require.Equal(t, "2026-11-22T07|us", last)
	_, ok = d.DueBefore(time.Date(2026, 11, 22, 0, 30, 0, 0, paris))
	require.False(t, ok)
	require.False(t, d.Bounded())

	// Without a time dimension every tuple is due at once and never late.
	nt := dims(0, nil, dim("region", Def{Kind: Static, Values: []string{"eu", "us"}}), dim("shard", Def{Kind: Integer, End: "2"}))
	require.NoError(t, nt.ValidateNew())
	require.True(t, nt.Bounded())
	last, ok = nt.DueBefore(time.Now())
	require.True(t, ok)
	require.Equal(t, "us|2", last)
	due, err = nt.Due("eu|1")
	require.NoError(t, err)
	require.True(t, due.IsZero())
	_, err = nt.Due("eu|3")
	require.ErrorIs(t, err, ErrInvalid)
	_, _, err = nt.Window("eu|1")
	require.ErrorIs(t, err, ErrInvalid)
}

func TestDimensionsValidate(t *testing.T) {
	day := Def{Kind: Daily, Start: "2026-01-01"}
	region := Def{Kind: Static, Values: []string{"eu", "us"}}
	hour := time.Hour
	for _, c := range []struct {
		d    Def
		want string
	}{
		{dims(0, nil, dim("date", day)), "2 to 4 dimensions"},
		{dims(0, nil, dim("a", region), dim("b", region), dim("c", region), dim("d", region), dim("e", region)), "2 to 4 dimensions"},
		{dims(0, nil, dim("date", day), dim("date", region)), "used twice"},
		{dims(0, nil, dim("Date", day), dim("region", region)), "a-z 0-9 _"},
		{dims(0, nil, dim("dataid", day), dim("region", region)), "placeholder"},
		{dims(0, nil, dim("region", region), dim("date", day)), "time dimension must come first"},
		{dims(0, nil, dim("date", day), dim("hour", Def{Kind: Hourly, Start: "2026-01-01T00", End: "2026-01-02T00"})), "time dimension must come first"},
		{dims(0, nil, dim("date", day), dim("n", Def{Kind: Integer})), "needs an end"},
		{dims(0, nil, dim("n", Def{Kind: Integer}), dim("region", region)), "INTEGER without end"},
		{dims(0, nil, dim("date", day), dim("c", Def{Kind: Dynamic, Values: []string{"a"}})), "take no start, end or values"},
		{dims(0, nil, dim("date", day), dim("c", Def{Kind: Dynamic, Members: []Member{{Value: "a"}, {Value: "a"}}})), "listed twice"},
		{dims(0, nil, dim("c", Def{Kind: Dynamic, Members: []Member{{Value: "a", Since: 1}}}), dim("region", region)), "beside a time dimension only"},
		{dims(0, nil, dim("date", day), dim("region", Def{Kind: Static, Values: []string{"eu"}, Members: []Member{{Value: "a"}}})), "DYNAMIC dimension only"},
		{Def{Kind: Dynamic, Members: []Member{{Value: "a"}}}, "keeps its values in the store"},
		{dims(0, nil, dim("date", Def{Kind: Daily, Start: "2026-01-01", Lag: hour}), dim("region", region)), "belong to the whole definition"},
		{dims(hour, nil, dim("region", region), dim("n", Def{Kind: Integer, End: "3"})), "apply to a time dimension"},
		{dims(0, nil, dim("date", Def{Kind: Daily}), dim("region", region)), "start is required"},
		{dims(0, nil, dim("date", day), dim("region", Def{Kind: Static, Values: []string{"a|b"}})), "invalid character"},
		{Def{Kind: Daily, Start: "2026-01-01", Dimensions: []Dimension{dim("a", region), dim("b", region)}}, "either a kind or dimensions"},
		{Def{Kind: Dimensional, Start: "x", Dimensions: []Dimension{dim("a", region), dim("b", region)}}, "not beside them"},
	} {
		err := c.d.ValidateNew()
		require.ErrorIs(t, err, ErrInvalid, c.want)
		require.Contains(t, err.Error(), c.want)
	}
	ok := dims(hour, nil, dim("date", day), dim("region", region))
	require.NoError(t, ok.ValidateNew())

	// Stores keep the JSON form; the API spells it as a Spec.
	b, err := json.Marshal(ok.Normalized())
	require.NoError(t, err)
	var back Def
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, ok.Normalized(), back)
	s := SpecOf(&back)
	require.Empty(t, s.Kind)
	require.Len(t, s.Dimensions, 2)
	require.Equal(t, back, *s.Def())
}

// Count and Back of a multi-dimensional definition agree with the product
// listed by Range: Count(a, b) is the length of Range(a, b) for tuples and
// first values as bounds; Back(id, k) is the tuple k places before id (the
// first one past the start), exactly, even where the first dimension is
// hours across an hour the clocks skip.
func TestDimensionsCountAndBack(t *testing.T) {
	regions := Def{Kind: Static, Values: []string{"us", "eu", "emea"}}
	shards := Def{Kind: Integer, Start: "8", End: "11"}
	for _, d := range []Def{
		dims(0, nil, dim("date", Def{Kind: Daily, Start: "2026-11-08", End: "2026-11-12"}), dim("region", regions), dim("shard", shards)),
		dims(0, nil, dim("date", Def{Kind: Daily, Start: "2026-11-08"}), dim("region", regions)),
		dims(0, nil, dim("region", regions), dim("shard", shards)),
		dims(0, nil, dim("n", Def{Kind: Integer, Start: "5", End: "100"}), dim("region", regions)),
		dims(0, nil, dim("hour", Def{Kind: Hourly, Start: "2026-03-29T00", End: "2026-03-29T05", Timezone: "Europe/Paris"}), dim("region", regions)),
	} {
		require.NoError(t, d.ValidateNew())
		last, ok := d.Last()
		if !d.Bounded() {
			// Unbounded: count within the first 40 tuples.
			seq, err := d.Range("", "")
			require.NoError(t, err)
			i := 0
			for id := range seq {
				if i++; i == 40 {
					last = id
					break
				}
			}
			ok = true
		}
		require.True(t, ok)
		all := walkTuples(t, d, "", last, false)
		for i, a := range all {
			for j := i; j < len(all); j++ {
				n, err := d.Count(a, all[j])
				require.NoError(t, err)
				require.Equal(t, int64(j-i+1), n, "Count(%q, %q)", a, all[j])
			}
			for k := 0; k <= i+2; k++ {
				back, ok := d.Back(a, k)
				require.True(t, ok, "Back(%q, %d)", a, k)
				require.Equal(t, all[max(i-k, 0)], back, "Back(%q, %d)", a, k)
			}
		}
		// First values as bounds, and bounds that are not expected.
		head, _, _ := strings.Cut(all[len(all)/2], "|")
		n, err := d.Count(head, head)
		require.NoError(t, err)
		require.Equal(t, int64(len(walkTuples(t, d, head, head, false))), n, "Count(%q, %q)", head, head)
		n, err = d.Count("", head)
		require.NoError(t, err)
		require.Equal(t, int64(len(walkTuples(t, d, "", head, false))), n)
	}
}

// A definition whose longest tuple exceeds 255 characters is refused: such
// dataids could never be published, and would stay missing.
func TestDimensionsLongestTuple(t *testing.T) {
	long := strings.Repeat("v", 128)
	d := dims(0, nil, dim("a", Def{Kind: Static, Values: []string{"x", long}}), dim("b", Def{Kind: Static, Values: []string{long}}))
	err := d.ValidateNew()
	require.ErrorIs(t, err, ErrInvalid)
	require.Contains(t, err.Error(), "257 characters")
	d = dims(0, nil, dim("a", Def{Kind: Static, Values: []string{strings.Repeat("v", 126)}}), dim("b", Def{Kind: Static, Values: []string{long}}))
	require.NoError(t, d.ValidateNew(), "255 characters fit")
}
