package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/webhook"
)

// timed is the timestamped signature as the README tells a receiver to
// compute it: HMAC-SHA256 of "<t>.<body>".
func timed(secret, body []byte, at int64) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "%d.", at)
	m.Write(body)
	return fmt.Sprintf("t=%d,sha256=%s", at, hex.EncodeToString(m.Sum(nil)))
}

// TestTimedSignature: the timestamped signature covers its timestamp, so
// a captured delivery replayed later, or with its timestamp changed, fails
// a receiver that checks the tolerance; the signature without timestamp
// verifies as before, but never where a tolerance is asked for.
func TestTimedSignature(t *testing.T) {
	body := []byte(`{"id":"event/1","kind":"hold"}`)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sig := webhook.SignAt(secret, body, at)
	require.Equal(t, timed(secret, body, at.Unix()), sig)
	now := func(d time.Duration) webhook.VerifyOption { return webhook.Now(func() time.Time { return at.Add(d) }) }
	within := webhook.Tolerance(5 * time.Minute)

	require.True(t, webhook.Verify(secret, body, sig), "without options the signature alone is checked")
	require.True(t, webhook.Verify(secret, body, sig, within, now(4*time.Minute)))
	require.True(t, webhook.Verify(secret, body, sig, within, now(-4*time.Minute)), "clocks differ a little")
	for name, check := range map[string]error{
		"replayed later":   webhook.Check(secret, body, sig, within, now(6*time.Minute)),
		"from the future":  webhook.Check(secret, body, sig, within, now(-6*time.Minute)),
		"timestamp moved":  webhook.Check(secret, body, strings.Replace(sig, fmt.Sprint(at.Unix()), fmt.Sprint(at.Unix()+300), 1), within, now(5*time.Minute)),
		"body changed":     webhook.Check(secret, []byte(`{"id":"event/2","kind":"hold"}`), sig, within, now(0)),
		"another secret":   webhook.Check([]byte("another"), body, sig, within, now(0)),
		"untimed, checked": webhook.Check(secret, body, webhook.Sign(secret, body), within, now(0)),
		"garbage":          webhook.Check(secret, body, "t=x,sha256=zz", within, now(0)),
		"empty":            webhook.Check(secret, body, "", within, now(0)),
	} {
		require.Error(t, check, name)
	}
	require.ErrorContains(t, webhook.Check(secret, body, sig, within, now(6*time.Minute)), "6m0s")
	require.ErrorContains(t, webhook.Check(secret, body, webhook.Sign(secret, body), within), webhook.HeaderSignatureV2)

	// The signature without a timestamp verifies as the README always said.
	legacy := webhook.Sign(secret, body)
	require.True(t, webhook.Verify(secret, body, legacy))
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	require.Equal(t, "sha256="+hex.EncodeToString(m.Sum(nil)), legacy)
}

// FuzzVerify: whatever a signature header holds, Check answers without
// panicking and accepts none but the body's own signature; a body signed
// at a time verifies within the tolerance of it and not beyond, and not
// for another body. Run longer
// with `go test ./webhook -run '^$' -fuzz FuzzVerify`.
func FuzzVerify(f *testing.F) {
	for _, seed := range []string{"", "sha256=", "t=", "t=1,", "t=1,sha256=00", "t=-1,sha256=zz", "t=99999999999999999999,sha256=00",
		"sha256=" + strings.Repeat("0", 64), "t=1772366400,sha256=" + strings.Repeat("a", 64)} {
		f.Add([]byte(`{"id":"event/1"}`), seed, int64(1772366400))
	}
	f.Fuzz(func(t *testing.T, body []byte, header string, at int64) {
		at %= 1 << 40
		now := webhook.Now(func() time.Time { return time.Unix(at, 0) })
		if webhook.Check(secret, body, header, webhook.Tolerance(time.Minute), now) == nil &&
			strings.ToLower(header) != webhook.SignAt(secret, body, time.Unix(at, 0)) && !strings.HasPrefix(header, "t=0") {
			t.Fatalf("%q verifies for %q", header, body)
		}
		sig := webhook.SignAt(secret, body, time.Unix(at, 0))
		if !webhook.Verify(secret, body, sig, webhook.Tolerance(time.Minute), now) {
			t.Fatalf("the signature of %q made now does not verify", body)
		}
		late := webhook.Now(func() time.Time { return time.Unix(at, 0).Add(2 * time.Minute) })
		if webhook.Verify(secret, body, sig, webhook.Tolerance(time.Minute), late) {
			t.Fatal("a signature beyond the tolerance verifies")
		}
		if webhook.Verify(secret, append(body, 'x'), sig) || webhook.Verify(secret, append(body, 'x'), webhook.Sign(secret, body)) {
			t.Fatal("a signature verifies for another body")
		}
	})
}
