package partition

import (
	"slices"
	"testing"
	"time"
)

var fuzzZones = []string{"", "Europe/Berlin", "America/New_York", "Pacific/Apia", "Australia/Lord_Howe"}

// FuzzDataID checks the invariants of the dataid formats on arbitrary
// strings: a dataid that parses formats back to itself (one spelling per
// period, so shortlex order is time order); an expected one has a window
// that holds exactly its own instants, Next and Prev invert each other, and
// Back steps one period back on the calendar.
// Run longer with `go test ./backends/partition -run '^$' -fuzz FuzzDataID`.
func FuzzDataID(f *testing.F) {
	for _, s := range []string{"2026-11-22T05", "2026-03-29T02", "2026-W53", "2027-W53", "2024-02-29",
		"2100-02-29", "2026-11", "9999-12-31T23", "0001-01-01T00", "0001-W01", "42", "007", ""} {
		f.Add(s, uint8(0), uint8(1))
	}
	f.Fuzz(func(t *testing.T, id string, kindIndex, zoneIndex uint8) {
		kind := Kinds[int(kindIndex)%4]
		def := Def{Kind: kind, Start: early[kind], Timezone: fuzzZones[int(zoneIndex)%len(fuzzZones)]}
		n, err := parsePeriod(kind, id)
		if err != nil {
			if def.Contains(id) {
				t.Fatalf("%q does not parse but is contained", id)
			}
			return
		}
		if got, ok := formatPeriod(kind, n); !ok || got != id {
			t.Fatalf("%q parses to %d which formats as %q", id, n, got)
		}
		if !def.Contains(id) {
			return
		}
		checkExpected(t, def, id)
	})
}

func checkExpected(t *testing.T, def Def, id string) {
	start, end, err := def.Window(id)
	if err != nil || !end.After(start) {
		t.Fatalf("%s %q: window %s-%s, %v", def.Timezone, id, start, end, err)
	}
	tc, _ := compileTime(def)
	n, _ := parsePeriod(def.Kind, id)
	for _, x := range []time.Time{start, end.Add(-time.Second)} {
		if got := tc.cal.containing(x.Unix()); got != n {
			t.Fatalf("%s %q: instant %s lies in period %d, not %d", def.Timezone, id, x, got, n)
		}
	}
	if back, ok := def.Back(id, 0); !ok || back != id {
		t.Fatalf("Back(%q, 0) = %q, %v", id, back, ok)
	}
	// One period back is the previous dataid, or id itself when the zone
	// skipped that period.
	if back, ok := def.Back(id, 1); !ok || (back != id && back != func() string { p, _ := def.Prev(id); return p }()) {
		t.Fatalf("%s: Back(%q, 1) = %q, %v", def.Timezone, id, back, ok)
	}
	if next, ok := def.Next(id); ok {
		if CompareDataID(next, id) <= 0 {
			t.Fatalf("Next(%q) = %q is not after it", id, next)
		}
		if back, _ := def.Prev(next); back != id {
			t.Fatalf("Prev(Next(%q)) = %q", id, back)
		}
		if s, _, _ := def.Window(next); !s.Equal(end) {
			t.Fatalf("%s: %q ends %s but %q begins %s", def.Timezone, id, end, next, s)
		}
	}
}

// FuzzInteger checks that INTEGER dataids are exactly the canonical
// decimal spellings, and that shortlex order on them is numeric order.
func FuzzInteger(f *testing.F) {
	for _, s := range []string{"0", "1", "10", "007", "-1", "+1", "18446744073709551615", "18446744073709551616"} {
		f.Add(s, "9")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		va, errA := parseInteger(a)
		vb, errB := parseInteger(b)
		if errA != nil || errB != nil {
			return
		}
		if va < vb != (CompareDataID(a, b) < 0) || (va == vb) != (a == b) {
			t.Fatalf("%q vs %q: numeric and shortlex order differ", a, b)
		}
	})
}

// FuzzMapping runs the reverse-consistency property of the mappings on
// fuzzed dataids: for the output due at a fuzzed instant, each input it
// reads lists it among its outputs; for the input due then, each output
// that lists it reads it. Neither list is longer than the mapping's bound
// over the whole definition (MaxInputs, MaxOutputs).
func FuzzMapping(f *testing.F) {
	f.Add(uint8(0), int64(0))
	f.Add(uint8(5), int64(214_000_000))
	f.Fuzz(func(t *testing.T, caseIndex uint8, seconds int64) {
		tc := mappingCases[int(caseIndex)%len(mappingCases)]
		at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(seconds%(10*365*86400)) * time.Second)
		if outID, ok := tc.out.DueBefore(at); ok {
			ins, err := tc.m.Inputs(tc.out, tc.in, outID)
			if err != nil {
				t.Fatal(err)
			}
			if tc.m.Kind != Latest && int64(len(ins)) > tc.m.MaxInputs(tc.out, tc.in) {
				t.Fatalf("%s: %s reads %d inputs, more than MaxInputs %d", tc.name, outID, len(ins), tc.m.MaxInputs(tc.out, tc.in))
			}
			for _, in := range ins {
				if outs, err := tc.m.Outputs(tc.out, tc.in, in); err != nil || !slices.Contains(outs, outID) {
					t.Fatalf("%s: %s reads %s, whose outputs are %v (%v)", tc.name, outID, in, outs, err)
				}
			}
		}
		if inID, ok := tc.in.DueBefore(at); ok {
			outs, err := tc.m.Outputs(tc.out, tc.in, inID)
			if err != nil {
				t.Fatal(err)
			}
			if tc.m.Kind == TimeWindow && int64(len(outs)) > tc.m.MaxOutputs(tc.out, tc.in) {
				t.Fatalf("%s: %s is read by %d outputs, more than MaxOutputs %d", tc.name, inID, len(outs), tc.m.MaxOutputs(tc.out, tc.in))
			}
			for _, out := range outs {
				if ins, err := tc.m.Inputs(tc.out, tc.in, out); err != nil || !slices.Contains(ins, inID) {
					t.Fatalf("%s: %s lists %s, which reads %v (%v)", tc.name, inID, out, ins, err)
				}
			}
		}
	})
}
