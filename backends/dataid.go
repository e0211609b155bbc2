package backends

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chunklock/chunklock/backends/partition"
)

// MaxDataIDLen is the longest dataid accepted, and the longest value of a
// multi-dimensional one.
const MaxDataIDLen = 128

// MaxTupleLen is the longest multi-dimensional dataid: its values joined by
// '|' (SPEC §10).
const MaxTupleLen = 255

// MaxDimensions is the most values a multi-dimensional dataid has.
const MaxDimensions = 4

// ValidateDataID checks that id is 1-128 characters of [A-Za-z0-9._:=+-],
// or a multi-dimensional dataid: 2-4 such values joined by '|', at most 255
// characters in all. Whether a dataset expects a tuple, and of how many
// values, is its partition definition's to say.
func ValidateDataID(id string) error {
	if strings.IndexByte(id, '|') < 0 {
		return validateValue(id)
	}
	if len(id) > MaxTupleLen {
		return InvalidArgument("multi-dimensional dataid must be at most %d characters long, got %d", MaxTupleLen, len(id))
	}
	values := strings.Split(id, "|")
	if len(values) > MaxDimensions {
		return InvalidArgument("dataid %q has %d values: a multi-dimensional dataid has 2-%d, joined by |", id, len(values), MaxDimensions)
	}
	for i, v := range values {
		if err := validateValue(v); err != nil {
			return InvalidArgument("dataid %q: value %d: %s", id, i+1, err.(*Error).Message)
		}
	}
	return nil
}

func validateValue(id string) error {
	if len(id) == 0 || len(id) > MaxDataIDLen {
		return InvalidArgument("dataid must be 1-%d characters long, got %d", MaxDataIDLen, len(id))
	}
	for i := 0; i < len(id); i++ {
		if !dataIDByte(id[i]) {
			r, _ := utf8.DecodeRuneInString(id[i:])
			return InvalidArgument("dataid %q has an invalid character, %q at character %d: allowed are A-Z a-z 0-9 . _ : = + - (and | between the values of a multi-dimensional dataid)", id, r, utf8.RuneCountInString(id[:i])+1)
		}
	}
	return nil
}

func dataIDByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("._:=+-", c) >= 0
}

// CompareDataID orders dataids shortlex: shorter first, then byte-wise. Plain
// non-negative integers and fixed-width ids sort naturally this way.
// Multi-dimensional dataids compare as tuples: value by value, each
// shortlex, a tuple after its own prefix (partition.CompareDataID).
func CompareDataID(a, b string) int { return partition.CompareDataID(a, b) }

// SortKey encodes a dataid so that byte order of keys is CompareDataID's
// order of dataids: a three-digit length, then the dataid; a
// multi-dimensional dataid's key is its values' keys one after the other
// (each is prefix-free, so the first value that differs decides). Stores
// index on it.
func SortKey(dataid string) string {
	if strings.IndexByte(dataid, '|') < 0 {
		return fmt.Sprintf("%03d%s", len(dataid), dataid)
	}
	var b strings.Builder
	b.Grow(len(dataid) + 3*MaxDimensions)
	for v := range strings.SplitSeq(dataid, "|") {
		fmt.Fprintf(&b, "%03d%s", len(v), v)
	}
	return b.String()
}

// DataIDFromSortKey inverts SortKey. It accepts only keys SortKey makes:
// one or more parts of exactly three decimal digits holding the length of
// the value that follows.
func DataIDFromSortKey(key string) (string, error) {
	if len(key) < 4 {
		return "", fmt.Errorf("sort key %q too short", key)
	}
	var values []string
	for rest := key; rest != ""; {
		if len(rest) < 4 {
			return "", fmt.Errorf("sort key %q malformed: a part too short", key)
		}
		n := 0
		for _, c := range []byte(rest[:3]) {
			if c < '0' || c > '9' {
				return "", fmt.Errorf("sort key %q malformed: want three digits of length first", key)
			}
			n = n*10 + int(c-'0')
		}
		if n == 0 || n > len(rest)-3 {
			return "", fmt.Errorf("sort key %q malformed: length %d does not match", key, n)
		}
		if strings.IndexByte(rest[3:3+n], '|') >= 0 {
			return "", fmt.Errorf("sort key %q malformed: a value holds |", key)
		}
		if values == nil && n == len(rest)-3 {
			return rest[3:], nil
		}
		values = append(values, rest[3:3+n])
		rest = rest[3+n:]
	}
	return strings.Join(values, "|"), nil
}

// UpperBound is the bound that makes to, a value of the first dimension,
// cover every tuple it begins (SPEC §10: from and to may be values of the
// first dimension): to followed by the largest value there is. A
// one-dimensional to is returned with it too; no one-dimensional dataid
// lies between them.
func UpperBound(to string) string {
	if to == "" || strings.IndexByte(to, '|') >= 0 {
		return to
	}
	return to + "|" + strings.Repeat("z", MaxDataIDLen)
}
