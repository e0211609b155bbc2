package partition

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func days(from, to string) []string {
	return slices.Collect(must(Def{Kind: Daily, Start: from, End: to}.Range("", "")))
}

func hours(tz, from, to string) []string {
	return slices.Collect(must(Def{Kind: Hourly, Start: from, End: to, Timezone: tz}.Range("", "")))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var (
	daily2020    = Def{Kind: Daily, Start: "2020-01-01"}
	dailyBerlin  = Def{Kind: Daily, Start: "2020-01-01", Timezone: "Europe/Berlin"}
	hourlyBerlin = Def{Kind: Hourly, Start: "2020-01-01T00", Timezone: "Europe/Berlin"}
	lookback     = Mapping{Kind: TimeWindow, StartOffset: -6}
	window       = Mapping{Kind: TimeWindow}
)

func TestMappingInputs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		m       Mapping
		out, in Def
		outID   string
		want    []string
	}{
		{"identity without definitions", Mapping{}, Def{}, Def{}, "2026-11-22", []string{"2026-11-22"}},
		{"identity outside the input's definition", Mapping{Kind: Identity}, Def{}, daily2020, "2019-12-31", []string{}},
		{"lookback", lookback, daily2020, daily2020, "2026-11-22", days("2026-11-16", "2026-11-22")},
		{"lookback across a year end", lookback, daily2020, daily2020, "2026-01-03", days("2025-12-28", "2026-01-03")},
		{"lookback across a month end", lookback, daily2020, daily2020, "2024-03-02", days("2024-02-25", "2024-03-02")},
		{"lookback at the input's start", lookback, daily2020, daily2020, "2020-01-03", days("2020-01-01", "2020-01-03")},
		{"output before the input's start", lookback, Def{Kind: Daily, Start: "2019-01-01"}, daily2020, "2019-06-01", []string{}},
		{"the day before only", Mapping{Kind: TimeWindow, StartOffset: -1, EndOffset: -1}, daily2020, daily2020, "2024-03-01", []string{"2024-02-29"}},
		{"lookahead", Mapping{Kind: TimeWindow, EndOffset: 2}, daily2020, daily2020, "2026-12-31", days("2026-12-31", "2027-01-02")},
		{"lookback over a 23-hour day", lookback, dailyBerlin, dailyBerlin, "2026-03-30", days("2026-03-24", "2026-03-30")},
		{"weekly roll-up across a year end", window, Def{Kind: Weekly, Start: "2020-W01"}, daily2020, "2026-W53", days("2026-12-28", "2027-01-03")},
		{"weekly roll-up, 2020-W53", window, Def{Kind: Weekly, Start: "2020-W01"}, daily2020, "2020-W53", days("2020-12-28", "2021-01-03")},
		{"weekly roll-up, 2027-W01", window, Def{Kind: Weekly, Start: "2020-W01"}, daily2020, "2027-W01", days("2027-01-04", "2027-01-10")},
		{"monthly roll-up, leap February", window, Def{Kind: Monthly, Start: "2020-01"}, daily2020, "2024-02", days("2024-02-01", "2024-02-29")},
		{"monthly roll-up, 2100-02", window, Def{Kind: Monthly, Start: "2020-01"}, daily2020, "2100-02", days("2100-02-01", "2100-02-28")},
		{"monthly roll-up of weeks", window, Def{Kind: Monthly, Start: "2020-01"}, Def{Kind: Weekly, Start: "2020-W01"}, "2027-01",
			[]string{"2026-W53", "2027-W01", "2027-W02", "2027-W03", "2027-W04"}},
		{"fan-out: the day of the hour", window, hourlyBerlin, dailyBerlin, "2026-10-25T02", []string{"2026-10-25"}},
		{"fan-out: the day in the input's zone", window, Def{Kind: Hourly, Start: "2020-01-01T00"}, dailyBerlin, "2026-10-24T22", []string{"2026-10-25"}},
		{"fan-out: a New York evening is the next UTC day", window, Def{Kind: Hourly, Start: "2020-01-01T00", Timezone: "America/New_York"},
			daily2020, "2026-11-01T19", []string{"2026-11-02"}},
		{"fan-out: a Kathmandu hour straddles two UTC days", window, Def{Kind: Hourly, Start: "2020-01-01T00", Timezone: "Asia/Kathmandu"},
			daily2020, "2026-11-22T05", []string{"2026-11-21", "2026-11-22"}},
		{"hours of a 25-hour Berlin day", window, dailyBerlin, hourlyBerlin, "2026-10-25", hours("Europe/Berlin", "2026-10-25T00", "2026-10-25T23")},
		{"hours of a 23-hour New York day", window, Def{Kind: Daily, Start: "2020-01-01", Timezone: "America/New_York"},
			Def{Kind: Hourly, Start: "2020-01-01T00", Timezone: "America/New_York"}, "2026-03-08",
			[]string{"2026-03-08T00", "2026-03-08T01", "2026-03-08T03", "2026-03-08T04", "2026-03-08T05", "2026-03-08T06",
				"2026-03-08T07", "2026-03-08T08", "2026-03-08T09", "2026-03-08T10", "2026-03-08T11", "2026-03-08T12",
				"2026-03-08T13", "2026-03-08T14", "2026-03-08T15", "2026-03-08T16", "2026-03-08T17", "2026-03-08T18",
				"2026-03-08T19", "2026-03-08T20", "2026-03-08T21", "2026-03-08T22", "2026-03-08T23"}},
		{"all of a static input", Mapping{Kind: All}, daily2020, Def{Kind: Static, Values: []string{"us", "eu", "asia"}}, "2026-11-22",
			[]string{"eu", "us", "asia"}},
		{"all of a bounded integer input", Mapping{Kind: All}, Def{}, Def{Kind: Integer, Start: "8", End: "11"}, "x", []string{"8", "9", "10", "11"}},
	} {
		require.NoError(t, tc.m.Validate(tc.out, tc.in), tc.name)
		got, err := tc.m.Inputs(tc.out, tc.in, tc.outID)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got, tc.name)
		for _, in := range got {
			outs, err := tc.m.Outputs(tc.out, tc.in, in)
			if tc.out.Bounded() || tc.m.Kind != All {
				require.NoError(t, err, tc.name)
				require.Contains(t, outs, tc.outID, "%s: Outputs(%s)", tc.name, in)
			}
		}
	}
}

func TestMappingOutputs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		m       Mapping
		out, in Def
		inID    string
		want    []string
	}{
		{"identity", Mapping{}, Def{}, Def{}, "7", []string{"7"}},
		{"lookback: the seven outputs that read a day", lookback, daily2020, daily2020, "2026-12-30", days("2026-12-30", "2027-01-05")},
		{"lookback near the output's end", lookback, Def{Kind: Daily, Start: "2020-01-01", End: "2027-01-01"}, daily2020, "2026-12-30",
			days("2026-12-30", "2027-01-01")},
		{"an input the definition does not expect", lookback, daily2020, daily2020, "2019-12-31", []string{}},
		{"the week of a day", window, Def{Kind: Weekly, Start: "2020-W01"}, daily2020, "2027-01-03", []string{"2026-W53"}},
		{"the week of a day, 2021-01-01", window, Def{Kind: Weekly, Start: "2020-W01"}, daily2020, "2021-01-01", []string{"2020-W53"}},
		{"the month of a day", window, Def{Kind: Monthly, Start: "2020-01"}, daily2020, "2024-02-29", []string{"2024-02"}},
		{"fan-out over a 25-hour day", window, hourlyBerlin, dailyBerlin, "2026-10-25", hours("Europe/Berlin", "2026-10-25T00", "2026-10-25T23")},
		{"fan-out over a 23-hour day", window, hourlyBerlin, dailyBerlin, "2026-03-29", hours("Europe/Berlin", "2026-03-29T00", "2026-03-29T23")},
		{"fan-out of a Berlin day to UTC hours", window, Def{Kind: Hourly, Start: "2020-01-01T00"}, dailyBerlin, "2026-10-25",
			hours("", "2026-10-24T22", "2026-10-25T22")},
		{"all outputs of a static input", Mapping{Kind: All}, Def{Kind: Integer, End: "2"}, Def{Kind: Static, Values: []string{"eu"}}, "eu",
			[]string{"0", "1", "2"}},
	} {
		require.NoError(t, tc.m.Validate(tc.out, tc.in), tc.name)
		got, err := tc.m.Outputs(tc.out, tc.in, tc.inID)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got, tc.name)
		for _, out := range got {
			ins, err := tc.m.Inputs(tc.out, tc.in, out)
			require.NoError(t, err, tc.name)
			require.Contains(t, ins, tc.inID, "%s: Inputs(%s)", tc.name, out)
		}
	}
	require.Len(t, must(window.Outputs(hourlyBerlin, dailyBerlin, "2026-10-25")), 24, "24 dataids")
	require.Len(t, must(window.Outputs(hourlyBerlin, dailyBerlin, "2026-03-29")), 23)
}

func TestLatest(t *testing.T) {
	latest := Mapping{Kind: Latest}
	static := Def{Kind: Static, Values: []string{"eu"}}
	monthly := Def{Kind: Monthly, Start: "2020-01"}
	for _, tc := range []struct {
		name     string
		out, in  Def
		id       string
		in2out   bool
		wantSpan Span
	}{
		{"same kind: not after the output", daily2020, daily2020, "2026-11-22", false, Span{To: "2026-11-22"}},
		{"monthly snapshot of a day", daily2020, monthly, "2026-11-22", false, Span{To: "2026-11"}},
		{"monthly snapshot bounded by its end", daily2020, Def{Kind: Monthly, Start: "2020-01", End: "2025-06"}, "2026-11-22", false, Span{To: "2025-06"}},
		{"output before any snapshot", Def{Kind: Daily, Start: "2019-01-01"}, monthly, "2019-05-05", false, Span{Empty: true}},
		{"no order between kinds", daily2020, static, "2026-11-22", false, Span{}},
		{"without definitions", Def{}, Def{}, "abc", false, Span{To: "abc"}},
		{"integers", Def{Kind: Integer}, Def{Kind: Integer, Start: "3"}, "7", false, Span{To: "7"}},
		{"reverse: outputs from the snapshot's month on", daily2020, monthly, "2026-11", true, Span{From: "2026-11-01"}},
		{"reverse: same kind", daily2020, daily2020, "2026-11-22", true, Span{From: "2026-11-22"}},
		{"reverse: no order between kinds", daily2020, static, "eu", true, Span{}},
		{"reverse: an input not expected", daily2020, static, "us", true, Span{Empty: true}},
	} {
		require.NoError(t, latest.Validate(tc.out, tc.in), tc.name)
		var span Span
		var err error
		if tc.in2out {
			span, err = latest.OutputSpan(tc.out, tc.in, tc.id)
		} else {
			span, err = latest.InputSpan(tc.out, tc.in, tc.id)
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.wantSpan, span, tc.name)
	}
	_, err := latest.Inputs(daily2020, daily2020, "2026-11-22")
	require.ErrorIs(t, err, ErrClaimTime)
	_, err = latest.Outputs(daily2020, daily2020, "2026-11-22")
	require.ErrorIs(t, err, ErrClaimTime)
}

func TestMappingValidate(t *testing.T) {
	static := Def{Kind: Static, Values: []string{"eu"}}
	for _, tc := range []struct {
		m       Mapping
		out, in Def
		want    string
	}{
		{Mapping{Kind: "NEAREST"}, daily2020, daily2020, `unknown mapping kind "NEAREST"`},
		{Mapping{StartOffset: -1}, daily2020, daily2020, "startOffset and endOffset apply to TIME_WINDOW mappings only, not IDENTITY"},
		{Mapping{Kind: All, EndOffset: 1}, daily2020, static, "apply to TIME_WINDOW mappings only, not ALL"},
		{Mapping{}, hourlyBerlin, daily2020, "the output is HOURLY and the input DAILY: use TIME_WINDOW, LATEST or ALL"},
		{window, daily2020, static, "TIME_WINDOW needs time partitions (HOURLY, DAILY, WEEKLY, MONTHLY) on both datasets, got output DAILY and input STATIC"},
		{window, Def{}, daily2020, "got output no definition and input DAILY"},
		{Mapping{Kind: TimeWindow, StartOffset: 1}, daily2020, daily2020, "startOffset 1 is after endOffset 0"},
		{Mapping{Kind: TimeWindow, StartOffset: -MaxOffset - 1}, daily2020, daily2020, "within ±10000 windows"},
		{Mapping{Kind: All}, daily2020, daily2020, "the input needs a bounded partition definition (STATIC, or an end), got DAILY without end"},
		{Mapping{Kind: All}, daily2020, Def{}, "got no definition"},
		{Mapping{Kind: All}, daily2020, Def{Kind: Integer, End: "10000"}, "more than 10000 input dataids"},
		{Mapping{}, Def{Kind: Daily}, daily2020, "output partition definition: start is required"},
		{Mapping{Kind: Latest}, Def{}, daily2020, "LATEST from an output with no definition to an input with DAILY without end"},
		{Mapping{Kind: Latest}, static, Def{Kind: Integer, Start: "1"}, "needs a bounded partition definition"},
	} {
		err := tc.m.Validate(tc.out, tc.in)
		require.ErrorIs(t, err, ErrInvalid, tc.want)
		require.ErrorContains(t, err, tc.want)
	}
	_, err := window.Inputs(daily2020, static, "2026-11-22")
	require.ErrorIs(t, err, ErrInvalid, "Inputs checks the kinds too")
	_, err = window.Inputs(hourlyBerlin, dailyBerlin, "2026-03-29T02")
	require.ErrorContains(t, err, "the clocks skip it")
	_, err = Mapping{Kind: All}.Outputs(daily2020, static, "eu")
	require.ErrorContains(t, err, "every output dataid is mapped, and the output has DAILY without end")
}

// mappingCases are the pairs the property test runs on.
var mappingCases = []struct {
	name    string
	m       Mapping
	out, in Def
}{
	{"lookback", lookback, daily2020, daily2020},
	{"lookback and lookahead, hourly", Mapping{Kind: TimeWindow, StartOffset: -30, EndOffset: 5}, hourlyBerlin, hourlyBerlin},
	{"weekly roll-up", window, Def{Kind: Weekly, Start: "2020-W01"}, daily2020},
	{"weekly roll-up with the week before", Mapping{Kind: TimeWindow, StartOffset: -7}, Def{Kind: Weekly, Start: "2020-W01"}, dailyBerlin},
	{"monthly roll-up across zones", window, Def{Kind: Monthly, Start: "2020-01", Timezone: "America/New_York"}, dailyBerlin},
	{"fan-out", window, hourlyBerlin, dailyBerlin},
	{"fan-out across zones", window, Def{Kind: Hourly, Start: "2020-01-01T00", Timezone: "Asia/Kathmandu"}, Def{Kind: Daily, Start: "2021-01-01", Timezone: "America/New_York"}},
	{"days of weeks", Mapping{Kind: TimeWindow, StartOffset: -1}, daily2020, Def{Kind: Weekly, Start: "2020-W10", End: "2027-W05"}},
	{"identity", Mapping{}, Def{Kind: Daily, Start: "2021-01-01"}, Def{Kind: Daily, Start: "2020-01-01", End: "2027-01-01"}},
	{"all", Mapping{Kind: All}, Def{Kind: Weekly, Start: "2020-W01", End: "2028-W01"}, Def{Kind: Static, Values: []string{"eu", "us"}}},
}

// TestMappingReverseIsConsistent is the property that ties both directions
// together: for random expected dataids, every input an output reads lists
// that output among its outputs, and every output an input lists reads it.
func TestMappingReverseIsConsistent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	randomID := func(d Def) string {
		if d.Kind == Static {
			return d.Values[r.IntN(len(d.Values))]
		}
		id, ok := d.DueBefore(base.Add(time.Duration(r.Int64N(int64(8 * 365 * 24 * time.Hour)))))
		if !ok {
			for first := range must(d.Range("", "")) {
				return first
			}
		}
		return id
	}
	for _, tc := range mappingCases {
		require.NoError(t, tc.m.Validate(tc.out, tc.in), tc.name)
		for range 200 {
			outID := randomID(tc.out)
			ins, err := tc.m.Inputs(tc.out, tc.in, outID)
			require.NoError(t, err, tc.name)
			for _, in := range ins {
				require.True(t, tc.in.Contains(in), "%s: %s reads %s which is not expected", tc.name, outID, in)
				require.Contains(t, must(tc.m.Outputs(tc.out, tc.in, in)), outID, "%s: Outputs(%s)", tc.name, in)
			}
			inID := randomID(tc.in)
			outs, err := tc.m.Outputs(tc.out, tc.in, inID)
			require.NoError(t, err, tc.name)
			for _, out := range outs {
				require.True(t, tc.out.Contains(out), "%s: %s not expected", tc.name, out)
				require.Contains(t, must(tc.m.Inputs(tc.out, tc.in, out)), inID, "%s: Inputs(%s)", tc.name, out)
			}
			// The neighbours just outside the reverse set do not read inID.
			for _, edge := range neighbours(tc.out, outs) {
				require.NotContains(t, must(tc.m.Inputs(tc.out, tc.in, edge)), inID, "%s: %s reads %s", tc.name, edge, inID)
			}
		}
	}
}

// neighbours is the expected dataid before the first of ids and the one
// after the last.
func neighbours(d Def, ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	var out []string
	if prev, ok := d.Prev(ids[0]); ok {
		out = append(out, prev)
	}
	if next, ok := d.Next(ids[len(ids)-1]); ok {
		out = append(out, next)
	}
	return out
}
