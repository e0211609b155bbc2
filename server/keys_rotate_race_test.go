package server_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys/keyops"
	"github.com/chunklock/chunklock/keys/vault"
)

// setBeforeWrite runs set once, just before the first credential write
// that goes through it: a setCredential landing between Rotate's read of
// the credentials and its writes.
type setBeforeWrite struct {
	backends.Store
	once sync.Once
	set  func()
}

func (s *setBeforeWrite) SetCredential(ctx context.Context, c backends.Credential) error {
	s.once.Do(s.set)
	return s.Store.SetCredential(ctx, c)
}

func (s *setBeforeWrite) ReplaceCredential(ctx context.Context, c backends.Credential, old []byte) (bool, error) {
	s.once.Do(s.set)
	return s.Store.ReplaceCredential(ctx, c, old)
}

// TestVaultRotationKeepsConcurrentSet: a credential set while Rotate runs,
// after Rotate read it and before it writes the rewrapped one back, is
// kept (and counted as skipped); the other credential is rewrapped.
func TestVaultRotationKeepsConcurrentSet(t *testing.T) {
	v := startVault(t)
	tok := v.setup()
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ctx := context.Background()
		k := v.keyring(tok)
		s := newVaultStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0], k)
		keyA, _ := s.define()
		s.setSecrets()
		ja, err := s.store.Job(ctx, "ja")
		require.NoError(t, err)
		pw := "Pw-ja-a-set-during-rotation-" + randHex(8)
		var set []byte
		racing := &setBeforeWrite{Store: s.store, set: func() {
			set, err = k.Encrypt(ctx, "ja", ja.Key.Public, []byte(pw))
			require.NoError(t, err)
			require.NoError(t, s.store.SetCredential(ctx, backends.Credential{Job: "ja", Dataset: "a", KeyKind: vault.Kind, Ciphertext: set}))
		}}

		rot, err := keyops.Rotate(ctx, racing, k, "ja", false)
		require.NoError(t, err)
		require.Equal(t, 1, rot.Rewrapped, "%+v", rot)
		require.Equal(t, 1, rot.Skipped, "%+v", rot)
		creds, err := s.store.Credentials(ctx, "ja")
		require.NoError(t, err)
		require.Len(t, creds, 2)
		require.Equal(t, "a", creds[0].Dataset)
		require.Equal(t, set, creds[0].Ciphertext, "the credential set during the rotation is kept")
		plain, err := k.Decrypt(ctx, "ja", ja.Key.Public, keyA, [][]byte{creds[0].Ciphertext})
		require.NoError(t, err)
		require.Equal(t, pw, string(plain[0]))
		requireVersion(t, ciphertexts(t, s.store, "ja"), rot.Version)
	})
}
