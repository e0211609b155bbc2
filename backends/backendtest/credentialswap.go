package backendtest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

func init() {
	definitionTests = append(definitionTests, testCase{"ReplaceCredential", (*suite).testReplaceCredential})
}

// testReplaceCredential: ReplaceCredential writes only over the ciphertext
// it names; a credential set in between, or none at all, is left alone.
func (s *suite) testReplaceCredential(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	cred := func(ct string) backends.Credential {
		return backends.Credential{Job: "ja", Dataset: "src", KeyKind: "age", Ciphertext: []byte(ct)}
	}
	stored := func() string {
		cs, err := b.s.Credentials(b.ctx, "ja")
		require.NoError(t, err)
		if len(cs) == 0 {
			return ""
		}
		require.Len(t, cs, 1)
		return string(cs[0].Ciphertext)
	}
	ok, err := b.s.ReplaceCredential(b.ctx, cred("sealed-2"), []byte("sealed-1"))
	require.NoError(t, err)
	require.False(t, ok, "no credential to replace")
	require.Equal(t, "", stored())

	require.NoError(t, b.s.SetCredential(b.ctx, cred("sealed-1")))
	ok, err = b.s.ReplaceCredential(b.ctx, cred("sealed-2"), []byte("sealed-1"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "sealed-2", stored())

	ok, err = b.s.ReplaceCredential(b.ctx, cred("sealed-3"), []byte("sealed-1"))
	require.NoError(t, err)
	require.False(t, ok, "the stored ciphertext is no longer sealed-1")
	require.Equal(t, "sealed-2", stored())

	_, err = b.s.ReplaceCredential(b.ctx, backends.Credential{Job: "ja", Dataset: "b", KeyKind: "age", Ciphertext: []byte("x")}, []byte("sealed-2"))
	require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "%v", err)
}
