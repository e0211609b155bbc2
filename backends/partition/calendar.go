package partition

import (
	"fmt"
	"time"
)

// The time kinds number their periods with an ordinal on the civil (local
// wall-clock) calendar, independent of any time zone:
//
//   - HOURLY: hours since 1970-01-01T00 (days*24 + hour),
//   - DAILY: days since 1970-01-01,
//   - WEEKLY: ISO weeks; week n begins on the Monday 7n-3 days after 1970-01-01
//     (a Thursday), so the week holding 1970-01-01 is 0,
//   - MONTHLY: year*12 + month-1.
//
// wallStart gives the civil start of a period as seconds on a clock that
// reads 0 at 1970-01-01 00:00 local time; window.go turns it into an instant.

const (
	secondsPerHour = 3600
	secondsPerDay  = 86400
	minYear        = 1
	maxYear        = 9999
)

// floorDiv divides rounding towards negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// civilDays is the number of days from 1970-01-01 to y-m-d (proleptic
// Gregorian calendar).
func civilDays(y int, m time.Month, d int) int64 {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / secondsPerDay
}

// dateOf inverts civilDays.
func dateOf(days int64) time.Time {
	return time.Unix(days*secondsPerDay, 0).UTC()
}

// isoWeekOne is the civil day of the Monday of ISO week 1 of year y: the
// week that holds January 4th.
func isoWeekOne(y int) int64 {
	jan4 := civilDays(y, time.January, 4)
	weekday := floorMod(jan4+3, 7) // 0 = Monday; 1970-01-01 was a Thursday
	return jan4 - weekday
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// isoWeeks is the number of ISO weeks of year y, 52 or 53: December 28th is
// always in the last week.
func isoWeeks(y int) int {
	_, w := time.Date(y, time.December, 28, 0, 0, 0, 0, time.UTC).ISOWeek()
	return w
}

// wallStart is the civil start of period n of kind k, in wall-clock seconds.
func wallStart(k Kind, n int64) int64 {
	switch k {
	case Hourly:
		return n * secondsPerHour
	case Daily:
		return n * secondsPerDay
	case Weekly:
		return (7*n - 3) * secondsPerDay
	default: // Monthly
		y, m := floorDiv(n, 12), floorMod(n, 12)
		return civilDays(int(y), time.Month(m+1), 1) * secondsPerDay
	}
}

// periodOfWall is the period of kind k whose civil span holds wall-clock
// second w.
func periodOfWall(k Kind, w int64) int64 {
	switch k {
	case Hourly:
		return floorDiv(w, secondsPerHour)
	case Daily:
		return floorDiv(w, secondsPerDay)
	case Weekly:
		return floorDiv(floorDiv(w, secondsPerDay)+3, 7)
	default: // Monthly
		t := time.Unix(w, 0).UTC()
		return int64(t.Year())*12 + int64(t.Month()) - 1
	}
}

// formatPeriod is the dataid of period n of kind k. ok is false when the
// dataid would need a year outside 0001-9999.
func formatPeriod(k Kind, n int64) (id string, ok bool) {
	switch k {
	case Hourly:
		t := dateOf(floorDiv(n, 24))
		return fmt.Sprintf("%04d-%02d-%02dT%02d", t.Year(), t.Month(), t.Day(), floorMod(n, 24)), yearOK(t.Year())
	case Daily:
		t := dateOf(n)
		return fmt.Sprintf("%04d-%02d-%02d", t.Year(), t.Month(), t.Day()), yearOK(t.Year())
	case Weekly:
		y, w := dateOf(7*n - 3).ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w), yearOK(y)
	default: // Monthly
		y, m := floorDiv(n, 12), floorMod(n, 12)
		return fmt.Sprintf("%04d-%02d", y, m+1), yearOK(int(y))
	}
}

func yearOK(y int) bool { return y >= minYear && y <= maxYear }

// example is a dataid of each kind, for error messages.
var example = map[Kind]string{
	Hourly: "2026-11-22T05", Daily: "2026-11-22", Weekly: "2026-W47", Monthly: "2026-11",
	Integer: "42", Static: "eu",
}

// layout is the format of each time kind's dataids, for error messages.
var layout = map[Kind]string{
	Hourly: "YYYY-MM-DDTHH", Daily: "YYYY-MM-DD", Weekly: "YYYY-Www (ISO week)", Monthly: "YYYY-MM",
}

// parsePeriod reads a dataid of time kind k into its period. It accepts
// exactly the strings formatPeriod makes; whether the period exists in a
// time zone (a skipped hour does not) is for the caller to check.
func parsePeriod(k Kind, id string) (int64, error) {
	n, reason := parseFields(k, id)
	if reason != "" {
		return 0, invalid("%q is not a %s dataid: %s; want %s, like %s", id, k, reason, layout[k], example[k])
	}
	return n, nil
}

// parseFields does the work of parsePeriod; a non-empty reason says what is
// wrong.
func parseFields(k Kind, id string) (n int64, reason string) {
	want := len(layout[k])
	if k == Weekly {
		want = len("YYYY-Www")
	}
	if len(id) != want {
		return 0, fmt.Sprintf("it has %d characters, not %d", len(id), want)
	}
	y, ok := digits(id, 0, 4)
	if !ok || !yearOK(y) {
		return 0, "the year is not 0001-9999"
	}
	if k == Weekly {
		return parseWeek(id, y)
	}
	if id[4] != '-' {
		return 0, "a '-' must follow the year"
	}
	m, ok := digits(id, 5, 7)
	if !ok || m < 1 || m > 12 {
		return 0, "the month is not 01-12"
	}
	if k == Monthly {
		return int64(y)*12 + int64(m) - 1, ""
	}
	return parseDay(k, id, y, time.Month(m))
}

func parseWeek(id string, y int) (int64, string) {
	if id[4:6] != "-W" {
		return 0, "\"-W\" must follow the year"
	}
	w, ok := digits(id, 6, 8)
	if !ok || w < 1 || w > isoWeeks(y) {
		return 0, fmt.Sprintf("ISO year %04d has weeks 01-%02d", y, isoWeeks(y))
	}
	monday := isoWeekOne(y) + 7*int64(w-1)
	return (monday + 3) / 7, ""
}

func parseDay(k Kind, id string, y int, m time.Month) (int64, string) {
	if id[7] != '-' {
		return 0, "a '-' must follow the month"
	}
	d, ok := digits(id, 8, 10)
	last := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
	if !ok || d < 1 || d > last {
		return 0, fmt.Sprintf("%04d-%02d has days 01-%02d", y, m, last)
	}
	days := civilDays(y, m, d)
	if k == Daily {
		return days, ""
	}
	if id[10] != 'T' {
		return 0, "a 'T' must follow the day"
	}
	h, ok := digits(id, 11, 13)
	if !ok || h > 23 {
		return 0, "the hour is not 00-23"
	}
	return days*24 + int64(h), ""
}

// digits reads s[from:to] as a decimal number of ASCII digits only.
func digits(s string, from, to int) (int, bool) {
	v := 0
	for i := from; i < to; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}
