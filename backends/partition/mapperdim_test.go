package partition

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// Mappings by dimension: Inputs lists the product of each axis's values
// read, Outputs its reverse, and the two agree over every tuple of small
// definitions; the spans bound them; what cannot be is refused, naming the
// entry.
func TestByDimensions(t *testing.T) {
	regions := Def{Kind: Static, Values: []string{"us", "eu"}}
	days := Def{Kind: Daily, Start: "2026-01-01", End: "2026-01-10"}
	hours := Def{Kind: Hourly, Start: "2026-01-01T00", End: "2026-01-03T23"}
	dateRegion := dims(0, nil, dim("date", days), dim("region", regions))
	hourRegion := dims(0, nil, dim("hour", hours), dim("region", regions))
	weeks := dims(0, nil, dim("week", Def{Kind: Weekly, Start: "2026-W01", End: "2026-W02"}), dim("region", regions))
	customers := dims(0, nil, dim("date", days), dim("customer", Def{Kind: Dynamic, Members: []Member{
		{Value: "acme"}, {Value: "beta", Since: unix("2026-01-05T00:00:00Z")}}}))
	openDays := dims(0, nil, dim("date", Def{Kind: Daily, Start: "2026-01-01"}), dim("region", regions))
	lookback := Mapping{Kind: TimeWindow, StartOffset: -2, Dimension: "date", OutputDimension: "date"}
	for _, c := range []struct {
		name    string
		out, in Def
		entries []Mapping
		probe   string
		reads   []string
	}{
		{"a 3-day lookback of one region", dateRegion, dateRegion, []Mapping{lookback}, "2026-01-05|eu",
			[]string{"2026-01-03|eu", "2026-01-04|eu", "2026-01-05|eu"}},
		{"the lookback near the start", dateRegion, dateRegion, []Mapping{lookback}, "2026-01-01|us", []string{"2026-01-01|us"}},
		{"hours into days by region", dateRegion, hourRegion, []Mapping{{Kind: TimeWindow, Dimension: "hour", OutputDimension: "date"}}, "2026-01-02|us",
			func() []string {
				var out []string
				for h := range 24 {
					out = append(out, "2026-01-02T"+twoDigits(h)+"|us")
				}
				return out
			}()},
		{"days into ISO weeks by region", weeks, dateRegion, []Mapping{{Kind: TimeWindow, Dimension: "date", OutputDimension: "week"}}, "2026-W02|eu",
			[]string{"2026-01-05|eu", "2026-01-06|eu", "2026-01-07|eu", "2026-01-08|eu", "2026-01-09|eu", "2026-01-10|eu"}},
		{"every region of a day, by an ALL entry", dateRegion, dateRegion, []Mapping{{Kind: All, Dimension: "region"}}, "2026-01-04|us",
			[]string{"2026-01-04|eu", "2026-01-04|us"}},
		{"a one-dimensional input's lookback into each region", dateRegion, days, []Mapping{{Kind: TimeWindow, StartOffset: -1, OutputDimension: "date"}}, "2026-01-04|eu",
			[]string{"2026-01-03", "2026-01-04"}},
		{"a lookback of a customer from its start", customers, customers, []Mapping{lookback}, "2026-01-06|beta",
			[]string{"2026-01-05|beta", "2026-01-06|beta"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := ByDimensions(c.entries)
			require.NoError(t, m.Validate(c.out, c.in))
			got, err := m.Inputs(c.out, c.in, c.probe)
			require.NoError(t, err)
			require.Equal(t, c.reads, got)
			span, err := m.InputSpan(c.out, c.in, c.probe)
			require.NoError(t, err)
			require.Equal(t, Span{From: c.reads[0], To: c.reads[len(c.reads)-1]}, span)
			// Inputs and Outputs agree over every tuple.
			outs := allOf(t, c.out)
			ins := allOf(t, c.in)
			reads := map[string][]string{}
			for _, o := range outs {
				ids, err := m.Inputs(c.out, c.in, o)
				require.NoError(t, err)
				for _, i := range ids {
					require.True(t, c.in.Contains(i), "%s reads %s, not expected", o, i)
					reads[i] = append(reads[i], o)
				}
			}
			for _, i := range ins {
				got, err := m.Outputs(c.out, c.in, i)
				require.NoError(t, err)
				want := reads[i]
				if want == nil {
					want = []string{}
				}
				require.Equal(t, want, got, "Outputs(%s)", i)
				require.LessOrEqual(t, int64(len(got)), m.MaxOutputs(c.out, c.in))
			}
		})
	}
	for _, c := range []struct {
		name    string
		out, in Def
		entries []Mapping
		want    string
	}{
		{"no such dimension", dateRegion, dateRegion, []Mapping{{Kind: TimeWindow, Dimension: "day", OutputDimension: "date"}}, `no dimension "day"`},
		{"a dimension unnamed", dateRegion, dateRegion, []Mapping{{Kind: TimeWindow, OutputDimension: "date"}}, "name the input dimension"},
		{"two entries on one dimension", dateRegion, dateRegion, []Mapping{lookback, lookback}, "two entries map input dimension date"},
		{"a window between STATIC values", dateRegion, dateRegion, []Mapping{{Kind: TimeWindow, Dimension: "region", OutputDimension: "region"}}, "TIME_WINDOW needs time partitions"},
		{"LATEST by dimension", dateRegion, dateRegion, []Mapping{{Kind: Latest, Dimension: "date", OutputDimension: "date"}}, "LATEST by dimension is not built yet"},
		{"IDENTITY with offsets between STATIC values", dateRegion, dateRegion, []Mapping{{Kind: TimeWindow, Dimension: "date", OutputDimension: "date"}, {Kind: Identity, StartOffset: -1, EndOffset: 3, Dimension: "region", OutputDimension: "region"}}, "apply to TIME_WINDOW mappings only, not IDENTITY"},
		{"ALL naming an output dimension", dateRegion, dateRegion, []Mapping{{Kind: All, Dimension: "region", OutputDimension: "region"}}, "names no outputDimension"},
		{"too wide", openDays, openDays, []Mapping{{Kind: TimeWindow, StartOffset: -2000, Dimension: "date", OutputDimension: "date"}}, "one publish may queue"},
	} {
		err := ByDimensions(c.entries).Validate(c.out, c.in)
		require.ErrorIs(t, err, ErrInvalid, c.name)
		require.Contains(t, err.Error(), c.want, c.name)
	}
	// An entry alone is not a mapping.
	require.ErrorIs(t, lookback.Validate(dateRegion, dateRegion), ErrInvalid)
	// Mappings stay comparable: two of the same entries are equal.
	require.True(t, ByDimensions([]Mapping{lookback}) == ByDimensions([]Mapping{lookback}))
	require.Equal(t, []Mapping{{Kind: TimeWindow, StartOffset: -2, Dimension: "date", OutputDimension: "date"}}, ByDimensions([]Mapping{lookback}).Entries())
}

func allOf(t *testing.T, d Def) []string {
	t.Helper()
	seq, err := d.Range("", "")
	require.NoError(t, err)
	var out []string
	for id := range seq {
		out = append(out, id)
	}
	slices.SortFunc(out, CompareDataID)
	return out
}

func twoDigits(n int) string {
	return string(rune('0'+n/10)) + string(rune('0'+n%10))
}

// A DYNAMIC dimension with no value yet is no error under a mapping by
// dimension (the job is declared before the sensor adds the first
// customer, and the last one may be removed): read by value, read whole
// or named by an ALL entry, it reads nothing and is read by nothing; with
// values, those are read.
func TestByDimensionsOverAnEmptyDynamicDimension(t *testing.T) {
	days := Def{Kind: Daily, Start: "2026-01-01", End: "2026-01-10"}
	customers := func(values ...string) Def {
		var ms []Member
		for _, v := range values {
			ms = append(ms, Member{Value: v})
		}
		return dims(0, nil, dim("date", days), dim("customer", Def{Kind: Dynamic, Members: ms}))
	}
	lookback := Mapping{Kind: TimeWindow, StartOffset: -1, Dimension: "date", OutputDimension: "date"}
	total := Mapping{Kind: TimeWindow, StartOffset: -1, Dimension: "date"}
	for _, c := range []struct {
		name    string
		out     func(...string) Def
		entries []Mapping
		probe   string
		reads   []string
	}{
		{"a lookback by customer", customers, []Mapping{lookback}, "2026-01-05|acme", []string{"2026-01-04|acme", "2026-01-05|acme"}},
		{"a total over every customer", func(...string) Def { return days }, []Mapping{total}, "2026-01-05",
			[]string{"2026-01-04|acme", "2026-01-04|beta", "2026-01-05|acme", "2026-01-05|beta"}},
		{"every customer named ALL", func(...string) Def { return days }, []Mapping{total, {Kind: All, Dimension: "customer"}}, "2026-01-05",
			[]string{"2026-01-04|acme", "2026-01-04|beta", "2026-01-05|acme", "2026-01-05|beta"}},
		{"the default rules, customer by value", customers, nil, "2026-01-05|beta", []string{"2026-01-05|beta"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := ByDimensions(c.entries)
			out, in := c.out(), customers()
			require.NoError(t, m.Validate(out, in), "no customer yet")
			probe := c.probe
			if out.Kind != Dimensional {
				ids, err := m.Inputs(out, in, probe)
				require.NoError(t, err)
				require.Empty(t, ids)
			}
			ids, err := m.Outputs(out, in, "2026-01-05|acme")
			require.NoError(t, err)
			require.Empty(t, ids, "no input tuple expected, none read")

			out, in = c.out("acme", "beta"), customers("acme", "beta")
			require.NoError(t, m.Validate(out, in))
			ids, err = m.Inputs(out, in, probe)
			require.NoError(t, err)
			require.Equal(t, c.reads, ids)
			for _, id := range ids {
				outs, err := m.Outputs(out, in, id)
				require.NoError(t, err)
				require.Contains(t, outs, probe)
			}
		})
	}
}

// TestLatestIntoDimensions: a one-dimensional snapshot read LATEST by an
// output with dimensions pairs with its time dimension: a tuple's
// candidates are its date's, and a snapshot is a candidate of every tuple
// from the first of its date.
func TestLatestIntoDimensions(t *testing.T) {
	snap := Def{Kind: Daily, Start: "2025-12-20"}
	out := Def{Kind: Dimensional, Dimensions: []Dimension{
		{Name: "date", Def: Def{Kind: Daily, Start: "2026-01-01", End: "2026-01-06"}},
		{Name: "region", Def: Def{Kind: Static, Values: []string{"us", "eu"}}},
	}}
	for _, m := range []Mapping{{Kind: Latest}, {Kind: Latest, OutputDimension: "date"}} {
		require.NoError(t, m.Validate(out, snap))
		in, err := m.InputSpan(out, snap, "2026-01-03|us")
		require.NoError(t, err)
		require.Equal(t, Span{To: "2026-01-03"}, in) // from the input's start
		outs, err := m.OutputSpan(out, snap, "2026-01-02")
		require.NoError(t, err)
		require.Equal(t, Span{From: "2026-01-02|eu"}, outs)
		outs, err = m.OutputSpan(out, snap, "2025-12-24")
		require.NoError(t, err)
		require.Equal(t, Span{From: "2026-01-01|eu"}, outs, "a snapshot before the output's start")
		_, err = m.Inputs(out, snap, "2026-01-03|us")
		require.ErrorIs(t, err, ErrClaimTime)
	}
	for _, c := range []struct {
		m    Mapping
		out  Def
		want string
	}{
		{Mapping{Kind: Latest, OutputDimension: "region"}, out, "pairs with the output's time dimension (date), not region"},
		{Mapping{Kind: Latest, OutputDimension: "day"}, out, `no dimension "day"`},
		{Mapping{Kind: Latest, StartOffset: -1}, out, "apply to TIME_WINDOW mappings only"},
		{Mapping{Kind: Latest}, Def{Kind: Dimensional, Dimensions: []Dimension{
			{Name: "region", Def: Def{Kind: Static, Values: []string{"us", "eu"}}},
			{Name: "product", Def: Def{Kind: Static, Values: []string{"a", "b"}}},
		}}, "has none"},
	} {
		err := c.m.Validate(c.out, snap)
		require.Error(t, err, "%+v", c.m)
		require.Contains(t, err.Error(), c.want)
	}
}
