package backendtest

import (
	"fmt"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The reference model's reading of TIME_WINDOW and LATEST (SPEC §9), in
// the same plain style as model.go and written without backends/partition:
// the windows are worked out here with the time package, so that a wrong
// window in the mapping functions shows up as a disagreement.
//
// The model's daily pipeline, around the suite's epoch (2026-01-01, a
// Thursday: ISO week 2026-W01 runs from Monday 2025-12-29):
//
//   - d, a daily source from 2025-12-27 to 2026-01-02;
//   - dim, a daily source of snapshots from 2025-12-28 to 2026-01-01;
//   - jr writes r, daily from 2025-12-27 to 2026-01-01, reading a 3-day
//     lookback of d (TIME_WINDOW, startOffset -2) and the newest READY
//     snapshot of dim not after its day (LATEST);
//   - jk writes wk, weekly 2025-W52 and 2026-W01, reading every day of d
//     in its ISO week (TIME_WINDOW): 2026-W01 rolls up days of 2025 and
//     2026;
//   - jp writes p, hour × region over three hours to the epoch (SPEC §10),
//     reading the newest READY snapshot of dim whose day begins before
//     the tuple's hour ends (LATEST paired with the hour dimension): every
//     region of an hour reads the same snapshot.
//
// Each mapped set holds only the dataids the input expects: r's first day
// reads one day of d, its second two; 2025-W52 reads 2025-12-27 and 28,
// 2026-W01 2025-12-29 to 2026-01-02; r on 2025-12-27 reads no snapshot of
// dim (there is none before it). Every output window has started at the
// epoch, the clock only moves on.
var (
	modelDailyD   = partition.Def{Kind: partition.Daily, Start: "2025-12-27", End: "2026-01-02"}
	modelDailyDim = partition.Def{Kind: partition.Daily, Start: "2025-12-28", End: "2026-01-01"}
	modelDailyR   = partition.Def{Kind: partition.Daily, Start: "2025-12-27", End: "2026-01-01"}
	modelWeeklyWk = partition.Def{Kind: partition.Weekly, Start: "2025-W52", End: "2026-W01"}

	modelDaysD   = []string{"2025-12-27", "2025-12-28", "2025-12-29", "2025-12-30", "2025-12-31", "2026-01-01", "2026-01-02"}
	modelDaysDim = []string{"2025-12-28", "2025-12-29", "2025-12-30", "2025-12-31", "2026-01-01"}
	modelDaysR   = []string{"2025-12-27", "2025-12-28", "2025-12-29", "2025-12-30", "2025-12-31", "2026-01-01"}
	modelWeeks   = []string{"2025-W52", "2026-W01"}

	// modelTimeIDs are the dataids operations use on the datasets with
	// a time definition, modelOutside one of the same kind that each does
	// not expect (publish, claim, force and blockers are refused there).
	modelTimeIDs = map[string][]string{"s": modelScheduleIDs, "d": modelDaysD, "dim": modelDaysDim, "r": modelDaysR, "o": modelDaysR, "wk": modelWeeks,
		"t": modelDimsIDs, "u": modelDimsIDs, "v": modelScheduleIDs, modelX: modelXIDs, modelZ: modelXIDs, modelQ: modelScheduleIDs, "l": modelDimsIDs,
		modelF: modelXIDs, modelG: modelScheduleIDs, modelE: modelXIDs, modelP: modelPIDs}
	modelOutside = map[string]string{"s": modelOutsideID, "d": "2026-01-03", "dim": "2025-12-27", "r": "2026-01-02", "o": "2026-01-02", "wk": "2026-W02",
		"t": "2026-01-01T02|eu", "u": "2026-01-01T00|fr", "v": modelOutsideID, modelX: "2026-01-01T02|c1", modelZ: "2026-01-01T02|k", modelQ: modelOutsideID, "l": "2026-01-01T02|us",
		modelF: "2026-01-01T02|c2", modelG: modelOutsideID, modelE: "2026-01-01T02|k", modelP: "2026-01-01T01|eu"}
)

// modelDay parses a daily dataid.
func modelDay(id string) time.Time {
	t, err := time.Parse(time.DateOnly, id)
	if err != nil {
		panic("model: " + err.Error())
	}
	return t
}

// windowDays are the first and last day of an output dataid's window: the
// day itself, or Monday to Sunday of an ISO week (ISO 8601: 4 January is
// always in week 1, whose Monday starts the week-numbering year).
func windowDays(kind partition.Kind, id string) (first, last time.Time) {
	switch kind {
	case partition.Daily:
		d := modelDay(id)
		return d, d
	case partition.Weekly:
		var year, week int
		if n, err := fmt.Sscanf(id, "%d-W%d", &year, &week); n != 2 || err != nil {
			panic("model: weekly dataid " + id)
		}
		jan4 := time.Date(year, time.January, 4, 0, 0, 0, 0, time.UTC)
		monday := jan4.AddDate(0, 0, -((int(jan4.Weekday())+6)%7)+7*(week-1))
		return monday, monday.AddDate(0, 0, 6)
	}
	panic("model: no windows of kind " + string(kind))
}

// windowReads is the TIME_WINDOW mapped set of j's input in (daily) for
// output dataid: the expected days from the window's first day moved by
// startOffset days to its last day moved by endOffset days.
func (m *model) windowReads(j *mJob, in, dataid string) []mRead {
	mp := j.mapped[in]
	first, last := windowDays(j.def.Kind, dataid)
	from, to := first.AddDate(0, 0, mp.StartOffset), last.AddDate(0, 0, mp.EndOffset)
	var out []mRead
	for _, x := range m.expected[in] {
		if day := modelDay(x); !day.Before(from) && !day.After(to) {
			out = append(out, mRead{in, x})
		}
	}
	return out
}

// latestReads is what j reads of its LATEST input in (daily) for output
// dataid: the newest READY expected day that begins before the output's
// window ends; without a READY one the newest such day (a blocker names
// it); nothing when the input expects no such day.
func (m *model) latestReads(j *mJob, in, dataid string) []mRead {
	var end time.Time // the output window's end
	if j.def.Kind == partition.Dimensional {
		hour, _, _ := strings.Cut(dataid, "|") // a tuple's window is its hour's
		at, err := time.Parse("2006-01-02T15", hour)
		if err != nil {
			panic("model: " + err.Error())
		}
		end = at.Add(time.Hour)
	} else {
		_, last := windowDays(j.def.Kind, dataid)
		end = last.AddDate(0, 0, 1)
	}
	var newest, newestReady string
	for _, x := range m.expected[in] { // in order: the last one wins
		if !modelDay(x).Before(end) {
			break
		}
		newest = x
		if m.status(m.outKey(in, x)) == ready {
			newestReady = x
		}
	}
	switch {
	case newestReady != "":
		return []mRead{{in, newestReady}}
	case newest != "":
		return []mRead{{in, newest}}
	}
	return nil
}

// mappedJobs are the model's jobs jr, jk, jo and jp.
func mappedJobs() []*mJob {
	return []*mJob{
		{id: "jr", inputs: []string{"d", "dim"}, output: "r", maxAttempts: 2, lease: 40 * time.Second,
			def: &modelDailyR, ids: modelDaysR, mapped: map[string]partition.Mapping{
				"d":   {Kind: partition.TimeWindow, StartOffset: -2},
				"dim": {Kind: partition.Latest},
			}},
		{id: "jk", inputs: []string{"d"}, output: "wk", maxAttempts: 2, lease: 30 * time.Second,
			retryDelay: 10 * time.Second, retryMax: 20 * time.Second,
			def: &modelWeeklyWk, ids: modelWeeks, mapped: map[string]partition.Mapping{
				"d": {Kind: partition.TimeWindow},
			}},
		// jo reads d's two and three days before: o's first two days
		// read nothing (before d's start), offered from the start.
		{id: "jo", inputs: []string{"d"}, output: "o", maxAttempts: 2, lease: 30 * time.Second,
			def: &modelDailyR, ids: modelDaysR, mapped: map[string]partition.Mapping{
				"d": {Kind: partition.TimeWindow, StartOffset: -3, EndOffset: -2},
			}},
		{id: "jp", inputs: []string{"dim"}, output: modelP, maxAttempts: 2, lease: 30 * time.Second,
			def: &modelPDef, ids: modelPIDs, mapped: map[string]partition.Mapping{
				"dim": {Kind: partition.Latest, OutputDimension: "hour"},
			}},
	}
}

// modelP is jp's output: the schedule's hours up to the epoch's × region,
// so that, as r's, every window of it has started at the epoch.
const modelP = "p"

var (
	modelPDef = partition.Def{Kind: partition.Dimensional, Dimensions: []partition.Dimension{
		{Name: "hour", Def: partition.Def{Kind: partition.Hourly, Start: "2025-12-31T22", End: "2026-01-01T00"}},
		{Name: "region", Def: partition.Def{Kind: partition.Static, Values: []string{"us", "eu"}}},
	}}
	modelPIDs = []string{"2025-12-31T22|eu", "2025-12-31T22|us", "2025-12-31T23|eu", "2025-12-31T23|us", "2026-01-01T00|eu", "2026-01-01T00|us"}
)

// storeMappings are the store's InputMappings of j, in input order.
func storeMappings(j *mJob) []backends.InputMapping {
	var out []backends.InputMapping
	for _, in := range j.inputs {
		if mp, ok := j.mapped[in]; ok && mp.Kind != partition.AcrossDimensions { // that one no job names: the store derives it
			out = append(out, backends.InputMapping{Dataset: in, Mapping: mp})
		}
	}
	return out
}

// hourWindowByRegion is what an output tuple (hour|region) reads of input
// in through an entry mapping the hour dimensions by a window (jl, jf):
// the input's expected tuples of the same region (or customer) whose hour
// lies between the output's hour moved by the entry's offsets, in order;
// for an output of hours alone (jg), those of every region.
func (m *model) hourWindowByRegion(mp partition.Mapping, in, dataid string) []mRead {
	hour, region, byValue := strings.Cut(dataid, "|")
	at, err := time.Parse("2006-01-02T15", hour)
	if err != nil {
		panic("model: " + err.Error())
	}
	from, to := at.Add(time.Duration(mp.StartOffset)*time.Hour), at.Add(time.Duration(mp.EndOffset)*time.Hour)
	var out []mRead
	for _, x := range m.expected[in] {
		h, r, _ := strings.Cut(x, "|")
		t, err := time.Parse("2006-01-02T15", h)
		if err != nil {
			panic("model: " + err.Error())
		}
		if (!byValue || r == region) && !t.Before(from) && !t.After(to) {
			out = append(out, mRead{in, x})
		}
	}
	return out
}
