package backends

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateDataID(t *testing.T) {
	for _, ok := range []string{"0", "1", "2026-11-22", "2026-11-22T10", "a.b_c:d=e+f-g", "ABCxyz09",
		strings.Repeat("z", MaxDataIDLen)} {
		require.NoError(t, ValidateDataID(ok), "%q", ok)
	}
	for _, bad := range []string{"", " ", "a b", "a/b", "a\\b", "é", "a\x00", "a\n", "100%", "a,b", "'1'", "a*",
		strings.Repeat("z", MaxDataIDLen+1)} {
		err := ValidateDataID(bad)
		require.ErrorIs(t, err, ErrInvalidArgument, "%q", bad)
	}
}

func TestCompareDataIDShortlex(t *testing.T) {
	requireOrdered(t, []string{"0", "1", "2", "9", "A", "Z", "a", "z", "00", "09", "10", "11", "99", "100",
		"2026-02-28", "2026-11-02", "2026-11-10", "2026-11-22T01", "2026-11-22T10"})
}

// requireOrdered checks that CompareDataID sorts ordered as listed, that
// it compares every pair of it so, and that SortKey orders byte-wise
// exactly like it.
func requireOrdered(t *testing.T, ordered []string) {
	t.Helper()
	shuffled := slices.Clone(ordered)
	slices.Reverse(shuffled)
	slices.SortFunc(shuffled, CompareDataID)
	require.Equal(t, ordered, shuffled)
	for i := range ordered {
		for j := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			require.Equal(t, want, CompareDataID(ordered[i], ordered[j]), "%q vs %q", ordered[i], ordered[j])
			require.Equal(t, want, strings.Compare(SortKey(ordered[i]), SortKey(ordered[j])), "%q vs %q", ordered[i], ordered[j])
		}
	}
}

// Multi-dimensional dataids order as tuples (SPEC §10): value by value,
// each shortlex, whatever their lengths in all; their sort keys agree.
func TestCompareDataIDTuples(t *testing.T) {
	requireOrdered(t, []string{"9", "9|b", "9|b|1", "9|b|10", "9|aa", "10|a", "10|b", "2026-11-22|eu", "2026-11-22|us",
		"2026-11-22|emea", "2026-11-23|eu", "2026-11-23|eu|0|0", "2026-11-23|eu|0|1"})
	require.Equal(t, "0102026-11-22002eu", SortKey("2026-11-22|eu"))
	got, err := DataIDFromSortKey("0102026-11-22002eu0011")
	require.NoError(t, err)
	require.Equal(t, "2026-11-22|eu|1", got)
	for _, ok := range []string{"a|b", "2026-11-22|eu|1|x", strings.Repeat("z", 127) + "|" + strings.Repeat("z", 127)} {
		require.NoError(t, ValidateDataID(ok), "%q", ok)
	}
	for _, bad := range []string{"|", "a|", "|a", "a||b", "a|b|c|d|e", "a|b c", strings.Repeat("z", 128) + "|" + strings.Repeat("z", 127),
		strings.Repeat("z", 129) + "|a"} {
		require.ErrorIs(t, ValidateDataID(bad), ErrInvalidArgument, "%q", bad)
	}
	_, err = DataIDFromSortKey("003a|b")
	require.Error(t, err)
}

func TestSortKey(t *testing.T) {
	require.Equal(t, "0019", SortKey("9"))
	require.Equal(t, "0102026-11-22", SortKey("2026-11-22"))
	require.Equal(t, "128"+strings.Repeat("z", 128), SortKey(strings.Repeat("z", 128)))
	for _, d := range []string{"1", "10", "2026-11-22", strings.Repeat("x", MaxDataIDLen)} {
		got, err := DataIDFromSortKey(SortKey(d))
		require.NoError(t, err)
		require.Equal(t, d, got)
	}
	for _, bad := range []string{"", "0", "00", "001", "002a", "001ab", "1a", "+01a", "-01a", " 01a", "0x1a", "abc", "01a"} {
		_, err := DataIDFromSortKey(bad)
		require.Error(t, err, "%q", bad)
	}
}

// FuzzDataID checks the invariants of dataid validation, shortlex order and
// sort keys on arbitrary pairs of strings.
func FuzzDataID(f *testing.F) {
	for _, s := range [][2]string{{"9", "10"}, {"2026-11-02", "2026-11-10"}, {"a", "B"}, {"", "x"}, {"a/b", "ab"},
		{"001a", "+01a"}, {strings.Repeat("9", 129), "1"}, {"2026-11-22|eu", "2026-11-22|us"}, {"9|b", "10|a"},
		{"a|b", "a"}, {"a||b", "a|b|c|d|e"}, {"003a|b", "001a001b"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		va, vb := ValidateDataID(a) == nil, ValidateDataID(b) == nil
		require.Equal(t, oracleValid(a), va, "validity of %q", a)
		if !va && CodeOf(ValidateDataID(a)) != CodeInvalidArgument {
			t.Fatalf("invalid dataid %q: want INVALID_ARGUMENT, got %v", a, ValidateDataID(a))
		}
		c := CompareDataID(a, b)
		require.Equal(t, -c, CompareDataID(b, a), "antisymmetry")
		require.Equal(t, c == 0, a == b, "equality")
		if len(a) != len(b) && !strings.Contains(a+b, "|") {
			require.Equal(t, len(a) < len(b), c < 0, "shorter first")
		}
		if va {
			got, err := DataIDFromSortKey(SortKey(a))
			require.NoError(t, err)
			require.Equal(t, a, got, "round trip")
		}
		if va && vb {
			require.Equal(t, c, strings.Compare(SortKey(a), SortKey(b)), "sort keys order like dataids")
		}
		// Whatever DataIDFromSortKey accepts is a canonical key.
		if d, err := DataIDFromSortKey(a); err == nil {
			require.Equal(t, a, SortKey(d), "%q is not canonical", a)
		}
	})
}

// oracleValid restates SPEC §3 and §10: 1-128 characters of
// [A-Za-z0-9._:=+-], or 2-4 such values joined by '|', at most 255 in all.
func oracleValid(s string) bool {
	if parts := strings.Split(s, "|"); len(parts) > 1 {
		if len(parts) > 4 || len(s) > 255 {
			return false
		}
		for _, p := range parts {
			if !oracleValue(p) {
				return false
			}
		}
		return true
	}
	return oracleValue(s)
}

func oracleValue(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:=+-", r) {
			return false
		}
	}
	return true
}
