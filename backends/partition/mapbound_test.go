package partition

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// boundStart is where each kind's definitions of the bound tests start:
// long enough before the dataids looked at that no window is cut short.
var boundStart = map[Kind]string{Hourly: "2009-01-01T00", Daily: "2009-01-01", Weekly: "2009-W01", Monthly: "2009-01"}

// boundSpans are the dataids of each kind whose spans the bound tests
// measure: around the DST changes of the northern and southern
// hemispheres (Lord Howe's half hour included) and Apia's skipped day and
// DST; the longer kinds over the months between.
func boundSpans(k Kind) [][2]string {
	switch k {
	case Hourly:
		return [][2]string{{"2011-09-22T00", "2011-09-26T00"}, {"2011-12-28T00", "2012-01-01T00"},
			{"2012-03-30T00", "2012-04-03T00"}, {"2024-03-08T00", "2024-03-12T00"}, {"2024-03-29T00", "2024-04-01T00"},
			{"2024-04-05T00", "2024-04-08T00"}, {"2024-10-04T00", "2024-10-07T00"}, {"2024-10-25T00", "2024-10-28T00"},
			{"2024-11-01T00", "2024-11-04T00"}}
	case Daily:
		return [][2]string{{"2011-09-15", "2011-10-05"}, {"2011-12-20", "2012-01-10"}, {"2012-03-25", "2012-04-10"},
			{"2024-03-05", "2024-04-10"}, {"2024-10-01", "2024-11-08"}}
	case Weekly:
		return [][2]string{{"2011-W37", "2012-W15"}, {"2024-W09", "2024-W15"}, {"2024-W39", "2024-W45"}}
	}
	return [][2]string{{"2011-08", "2012-05"}, {"2024-02", "2024-04"}, {"2024-09", "2024-11"}}
}

// measuredMax is the most dataids f lists for a dataid of d among those of
// boundSpans.
func measuredMax(t *testing.T, d Def, f func(id string) ([]string, error)) int64 {
	var most int64
	for _, s := range boundSpans(d.Kind) {
		ids, err := d.Range(s[0], s[1])
		require.NoError(t, err)
		for id := range ids {
			got, err := f(id)
			require.NoError(t, err, id)
			most = max(most, int64(len(got)))
		}
	}
	return most
}

// TestMappingBoundsHold: MaxInputs and MaxOutputs are never below what
// Inputs and Outputs list, for every pair of time kinds, in one zone and
// across zones (DST, half-hour offsets, a skipped day), with and without
// offsets; in one zone, for the same kind or kinds that nest (hours in
// days), they are exact.
func TestMappingBoundsHold(t *testing.T) {
	zones := [][2]string{{"UTC", "UTC"}, {"Europe/Berlin", "Europe/Berlin"}, {"Pacific/Apia", "Pacific/Apia"},
		{"America/New_York", "Europe/Berlin"}, {"Asia/Kolkata", "UTC"}, {"Australia/Lord_Howe", "Pacific/Apia"}}
	kinds := []Kind{Hourly, Daily, Weekly, Monthly}
	for _, z := range zones {
		for _, ok := range kinds {
			for _, ik := range kinds {
				out := Def{Kind: ok, Start: boundStart[ok], Timezone: z[0]}
				in := Def{Kind: ik, Start: boundStart[ik], Timezone: z[1]}
				for _, off := range [][2]int{{0, 0}, {-3, 0}, {-2, 1}} {
					m := Mapping{Kind: TimeWindow, StartOffset: off[0], EndOffset: off[1]}
					name := fmt.Sprintf("%s %s <- %s %s, offsets %v", ok, z[0], ik, z[1], off)
					ins := measuredMax(t, out, func(id string) ([]string, error) { return m.Inputs(out, in, id) })
					outs := measuredMax(t, in, func(id string) ([]string, error) { return m.Outputs(out, in, id) })
					require.LessOrEqual(t, ins, m.MaxInputs(out, in), "%s: inputs", name)
					require.LessOrEqual(t, outs, m.MaxOutputs(out, in), "%s: outputs", name)
					_, nest := nested[[2]Kind{ok, ik}]
					if z[0] == z[1] && (ok == ik || nest) {
						require.Equal(t, ins, m.MaxInputs(out, in), "%s: inputs, exactly", name)
					}
				}
			}
		}
	}
}

// TestMappingBoundsOfWideWindows: a year of hours back between hourly
// datasets reads 8,761 hours; one hour is read by 8,761 outputs; a bounded
// input caps both at its size; ALL counts the input's dataids.
func TestMappingBoundsOfWideWindows(t *testing.T) {
	hours := Def{Kind: Hourly, Start: "2020-01-01T00", Timezone: "Europe/Berlin"}
	year := Mapping{Kind: TimeWindow, StartOffset: -8760}
	require.EqualValues(t, 8761, year.MaxInputs(hours, hours))
	require.EqualValues(t, 8761, year.MaxOutputs(hours, hours))
	short := Def{Kind: Hourly, Start: "2020-01-01T00", End: "2020-01-02T23", Timezone: "Europe/Berlin"}
	require.EqualValues(t, 48, year.MaxInputs(hours, short))
	require.EqualValues(t, 48, year.MaxOutputs(short, hours))
	regions := Def{Kind: Static, Values: []string{"eu", "us", "apac"}}
	require.EqualValues(t, 3, Mapping{Kind: All}.MaxInputs(hours, regions))
	require.EqualValues(t, 1, Mapping{Kind: All}.MaxOutputs(hours, regions))
	require.EqualValues(t, 1, Mapping{Kind: Latest}.MaxInputs(hours, hours))
}
