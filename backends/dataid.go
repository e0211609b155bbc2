package backends

import (
	"fmt"
	"strings"
)

// MaxDataIDLen is the longest dataid accepted.
const MaxDataIDLen = 128

// ValidateDataID checks that id is 1-128 characters of [A-Za-z0-9._:=+-].
func ValidateDataID(id string) error {
	if len(id) == 0 || len(id) > MaxDataIDLen {
		return InvalidArgument("dataid must be 1-%d characters long, got %d", MaxDataIDLen, len(id))
	}
	for i := 0; i < len(id); i++ {
		if !dataIDByte(id[i]) {
			return InvalidArgument("dataid %q has an invalid character at %d: allowed are A-Z a-z 0-9 . _ : = + -", id, i)
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
func CompareDataID(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// SortKey encodes a dataid so that byte order of keys is shortlex order of
// dataids: a three-digit length, then the dataid. Stores index on it.
func SortKey(dataid string) string {
	return fmt.Sprintf("%03d%s", len(dataid), dataid)
}

// DataIDFromSortKey inverts SortKey. It accepts only keys SortKey makes:
// exactly three decimal digits holding the length of the rest.
func DataIDFromSortKey(key string) (string, error) {
	if len(key) < 4 {
		return "", fmt.Errorf("sort key %q too short", key)
	}
	n := 0
	for _, c := range []byte(key[:3]) {
		if c < '0' || c > '9' {
			return "", fmt.Errorf("sort key %q malformed: want three digits of length first", key)
		}
		n = n*10 + int(c-'0')
	}
	if n != len(key)-3 {
		return "", fmt.Errorf("sort key %q malformed: length %d does not match", key, n)
	}
	return key[3:], nil
}
