package partition_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// TestStaticValuesFollowTheDataIDRule checks that a STATIC value is valid
// exactly when the storage layer accepts it as a dataid: the package keeps
// its own copy of the rule to stay free of imports.
func TestStaticValuesFollowTheDataIDRule(t *testing.T) {
	for _, v := range []string{"eu", "a.b_c:d=e+f-g", "0", "", " ", "a b", "a/b", "é", "a\x00", "100%", "a,b",
		strings.Repeat("z", backends.MaxDataIDLen), strings.Repeat("z", backends.MaxDataIDLen+1)} {
		want := backends.ValidateDataID(v) == nil
		err := partition.Def{Kind: partition.Static, Values: []string{v}}.Validate()
		if got := err == nil; got != want {
			t.Errorf("value %q: storage valid %v, partition valid %v (%v)", v, want, got, err)
		}
		if err != nil && !errors.Is(err, partition.ErrInvalid) {
			t.Errorf("value %q: %v is not ErrInvalid", v, err)
		}
	}
}
