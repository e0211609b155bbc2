package partition

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is the kind of a partition definition.
type Kind string

// The kinds, named as in the GraphQL API.
const (
	Hourly  Kind = "HOURLY"
	Daily   Kind = "DAILY"
	Weekly  Kind = "WEEKLY"
	Monthly Kind = "MONTHLY"
	Integer Kind = "INTEGER"
	Static  Kind = "STATIC"
	// Dynamic dataids are a set kept in the store and changed at run time
	// (SPEC §10): the definition holds none of them, only lag and
	// deadline, which count from when each value was added.
	Dynamic Kind = "DYNAMIC"
)

// Kinds lists every kind, in the order of the specification.
var Kinds = []Kind{Hourly, Daily, Weekly, Monthly, Integer, Static, Dynamic}

// IsTime reports whether k is a time kind: its dataids have windows.
func (k Kind) IsTime() bool {
	return k == Hourly || k == Daily || k == Weekly || k == Monthly
}

// MaxStaticValues bounds the values of a STATIC definition: all of them are
// expected at once, and an ALL mapping reads every one in a single claim.
const MaxStaticValues = 10000

// Def is a partition definition: the set of dataids a dataset is expected
// to have, and when each is due. The zero Def (Kind "") means "no
// definition": Validate refuses it, and the mapping functions treat it as a
// dataset that expects any dataid.
// Its JSON form (durations in nanoseconds) is how stores keep it.
type Def struct {
	Kind Kind `json:"kind"`
	// Start is the first expected dataid: required for time kinds,
	// optional for INTEGER (default "0"), not allowed for STATIC.
	Start string `json:"start,omitempty"`
	// End is the last expected dataid, inclusive; empty means unbounded.
	End string `json:"end,omitempty"`
	// Timezone is the IANA zone windows are computed in (time kinds only);
	// empty means UTC.
	Timezone string `json:"timezone,omitempty"`
	// Values are the dataids of a STATIC definition, in any order.
	Values []string `json:"values,omitempty"`
	// Lag delays when a window is due: at its end + Lag (time kinds only).
	Lag time.Duration `json:"lag,omitempty"`
	// Deadline, when set, makes a window late when it is not READY by its
	// end + *Deadline (time kinds only).
	Deadline *time.Duration `json:"deadline,omitempty"`
	// Dimensions are the named dimensions of a Dimensional definition
	// (dims.go), which has none of the fields above but Lag and Deadline.
	Dimensions []Dimension `json:"dimensions,omitempty"`
	// Members are the values of a DYNAMIC dimension (ragged.go), added and
	// removed at run time; a one-dimensional DYNAMIC definition keeps its
	// values in the store instead.
	Members []Member `json:"members,omitempty"`
	// Removed are values once removed from a DYNAMIC dimension and not
	// added again (their chunks stay): adding one again looks for its
	// chunks (the most recent MaxDynamicDimensionValues of them).
	Removed []string `json:"removed,omitempty"`
}

// ErrInvalid matches (with errors.Is) every error of this package about a
// definition, a mapping or a dataid given to them: the caller's input is
// wrong, and the message says how.
var ErrInvalid = errors.New("invalid partition argument")

type invalidError struct{ msg string }

func (e invalidError) Error() string        { return e.msg }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(format string, args ...any) error {
	return invalidError{fmt.Sprintf(format, args...)}
}

// IsZero reports whether d is the zero Def: no definition.
func (d Def) IsZero() bool {
	return d.Kind == "" && d.Start == "" && d.End == "" && d.Timezone == "" && d.Values == nil &&
		d.Lag == 0 && d.Deadline == nil && d.Dimensions == nil && d.Members == nil && d.Removed == nil
}

// Bounded reports whether d expects a finite set of dataids known from the
// definition alone (a DYNAMIC set is not: it changes at run time).
func (d Def) Bounded() bool {
	if d.Kind == Dimensional {
		return d.dimDef(0).Bounded() // the others are (Validate)
	}
	return d.Kind == Static || d.End != ""
}

// Validate checks d and says what is wrong in terms of the definition's
// fields. Every other method assumes a definition that passed it. It
// takes any definition a store may hold, including one stored with a
// host-only zone name before those were refused; a definition about to be
// stored passes ValidateNew.
func (d Def) Validate() error {
	if d.Kind == Dimensional || len(d.Dimensions) > 0 {
		if d.Kind != Dimensional {
			return invalid("a definition has either a kind or dimensions, not both")
		}
		return d.validateDimensions()
	}
	if err := d.validateFields(); err != nil {
		return err
	}
	switch {
	case d.Kind.IsTime():
		_, err := compileTime(d)
		return err
	case d.Kind == Integer:
		_, err := compileInteger(d)
		return err
	case d.Kind == Dynamic:
		return nil
	default:
		return validateStatic(d.Values)
	}
}

// ValidateNew is Validate for a definition about to be stored: its time
// zone must also be a name of the IANA database by its own name. Names that
// only some hosts' zoneinfo has (posix/..., right/..., posixrules) and
// Factory pass Validate, so that definitions stored before they were
// refused keep loading, but are refused here, saying what to name instead.
func (d Def) ValidateNew() error {
	if err := d.Validate(); err != nil {
		return err
	}
	if d.Kind.IsTime() {
		return checkNewZone(d.Timezone)
	}
	if d.Kind == Dimensional && d.hasTime() {
		if err := checkNewZone(d.Dimensions[0].Timezone); err != nil {
			return invalid("dimension 1 (%s): %v", d.Dimensions[0].Name, err)
		}
	}
	return nil
}

// validateFields checks the fields that do not depend on the kind's dataid
// format: the kind itself and the fields each kind allows.
func (d Def) validateFields() error {
	kinds := fmt.Sprint(Kinds)
	switch {
	case len(d.Members) > 0 || len(d.Removed) > 0:
		return invalid("members belong to a DYNAMIC dimension of a definition with dimensions; a one-dimensional DYNAMIC definition keeps its values in the store (addPartitions)")
	case d.Kind == "":
		return invalid("partition kind is required: one of %s", kinds[1:len(kinds)-1])
	case !d.Kind.IsTime() && d.Kind != Integer && d.Kind != Static && d.Kind != Dynamic:
		return invalid("unknown partition kind %q: want one of %s", d.Kind, kinds[1:len(kinds)-1])
	case d.Lag < 0:
		return invalid("lag must not be negative, got %s", d.Lag)
	case d.Deadline != nil && *d.Deadline < 0:
		return invalid("deadline must not be negative, got %s", *d.Deadline)
	case d.Deadline != nil && *d.Deadline < d.Lag:
		return invalid("deadline (%s) is shorter than lag (%s): every window would be late before it is due",
			*d.Deadline, d.Lag)
	}
	if d.Kind.IsTime() {
		if len(d.Values) > 0 {
			return invalid("values are for STATIC partitions only, not %s", d.Kind)
		}
		return nil
	}
	if d.Kind == Dynamic {
		switch {
		case d.Start != "" || d.End != "" || len(d.Values) > 0:
			return invalid("DYNAMIC partitions take no start, end or values: their values are added at run time (addPartitions)")
		case d.Timezone != "":
			return invalid("timezone applies to time kinds (HOURLY, DAILY, WEEKLY, MONTHLY) only, not DYNAMIC")
		}
		return nil
	}
	switch {
	case d.Timezone != "":
		return invalid("timezone applies to time kinds (HOURLY, DAILY, WEEKLY, MONTHLY) only, not %s", d.Kind)
	case d.Lag != 0 || d.Deadline != nil:
		return invalid("lag and deadline apply to time kinds only: %s dataids have no window", d.Kind)
	case d.Kind == Integer && len(d.Values) > 0:
		return invalid("values are for STATIC partitions only, not INTEGER")
	case d.Kind == Static && (d.Start != "" || d.End != ""):
		return invalid("STATIC partitions take values, not start or end")
	}
	return nil
}

// timeDef is a validated time definition in period numbers.
type timeDef struct {
	cal         calendar
	first, last int64 // expected periods, inclusive
	bounded     bool
	lag         time.Duration
	deadline    *time.Duration
}

func compileTime(d Def) (timeDef, error) {
	z, err := loadZone(d.Timezone)
	if err != nil {
		return timeDef{}, err
	}
	t := timeDef{cal: calendar{d.Kind, z}, last: periodLimits[d.Kind][1], lag: d.Lag, deadline: d.Deadline}
	if d.Start == "" {
		return t, invalid("start is required for %s partitions: the first dataid, like %s", d.Kind, example[d.Kind])
	}
	if t.first, err = t.existing("start", d.Start); err != nil {
		return t, err
	}
	if d.End == "" {
		return t, nil
	}
	t.bounded = true
	if t.last, err = t.existing("end", d.End); err != nil {
		return t, err
	}
	if t.last < t.first {
		return t, invalid("end %q is before start %q", d.End, d.Start)
	}
	return t, nil
}

// existing parses the dataid of a field and checks that it has a window.
func (t timeDef) existing(field, id string) (int64, error) {
	n, err := parsePeriod(t.cal.kind, id)
	if err != nil {
		return 0, invalid("%s %v", field, err)
	}
	if !t.cal.exists(n) {
		return 0, invalid("%s %q does not exist in %s: the clocks skip it", field, id, t.cal.zone.loc)
	}
	return n, nil
}

// periodLimits are the first and last period of each time kind whose
// dataids have a four-digit year.
var periodLimits = func() map[Kind][2]int64 {
	limits := map[Kind][2]int64{}
	for k, ends := range map[Kind][2]string{
		Hourly: {"0001-01-01T00", "9999-12-31T23"}, Daily: {"0001-01-01", "9999-12-31"},
		Weekly: {"0001-W01", fmt.Sprintf("9999-W%02d", isoWeeks(maxYear))}, Monthly: {"0001-01", "9999-12"},
	} {
		lo, err1 := parsePeriod(k, ends[0])
		hi, err2 := parsePeriod(k, ends[1])
		if err := errors.Join(err1, err2); err != nil {
			panic(err)
		}
		limits[k] = [2]int64{lo, hi}
	}
	return limits
}()

// validDataID mirrors the dataid rule of the storage layer: 1-128
// characters of A-Z a-z 0-9 . _ : = + -.
func validDataID(id string) error {
	if len(id) == 0 || len(id) > 128 {
		return invalid("dataid must be 1-128 characters long, got %d", len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("._:=+-", c) >= 0
		if !ok {
			r, _ := utf8.DecodeRuneInString(id[i:])
			return invalid("dataid %q has an invalid character, %q at character %d: allowed are A-Z a-z 0-9 . _ : = + -", id, r, utf8.RuneCountInString(id[:i])+1)
		}
	}
	return nil
}

// CompareDataID orders dataids shortlex: shorter first, then byte-wise.
// Plain non-negative integers and fixed-width ids sort naturally this way.
// Multi-dimensional dataids compare as tuples: value by value, each
// shortlex, a tuple after its own prefix. It is the order of the whole
// project (backends.CompareDataID, and the stores' sort keys).
func CompareDataID(a, b string) int {
	if strings.IndexByte(a, '|') < 0 && strings.IndexByte(b, '|') < 0 {
		return shortlex(a, b)
	}
	for {
		av, arest, amore := strings.Cut(a, "|")
		bv, brest, bmore := strings.Cut(b, "|")
		if c := shortlex(av, bv); c != 0 {
			return c
		}
		switch {
		case !amore && !bmore:
			return 0
		case !amore:
			return -1
		case !bmore:
			return 1
		}
		a, b = arest, brest
	}
}

func shortlex(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}
