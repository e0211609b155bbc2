package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Headers of a delivery.
const (
	// HeaderSignature holds "sha256=" and the hex HMAC-SHA256 of the body
	// keyed with the webhook secret. It has no timestamp: a receiver that
	// checks only it accepts a captured delivery sent again later. Check
	// HeaderSignatureV2 instead; this one stays for receivers written
	// before it.
	HeaderSignature = "Chunklock-Signature"
	// HeaderSignatureV2 holds "t=<Unix seconds>,sha256=<hex>": when the
	// delivery attempt was signed, and the hex HMAC-SHA256 of
	// "<t>.<body>" keyed with the webhook secret. The timestamp is covered
	// by the signature, so a receiver that also checks that it is recent
	// (Verify with Tolerance) refuses a replayed delivery.
	HeaderSignatureV2 = "Chunklock-Signature-V2"
	// HeaderEventID holds the alert's stable id (Alert.ID): a receiver
	// drops an id it has seen.
	HeaderEventID = "Chunklock-Event-Id"
	// HeaderEventKind holds the alert's kind (Alert.Kind).
	HeaderEventKind = "Chunklock-Event-Kind"
)

// DefaultTolerance is how far from now a timestamp should be accepted:
// more than a request's timeout and the clocks' difference, less than a
// replay would take.
const DefaultTolerance = 5 * time.Minute

// Sign returns the value of HeaderSignature for body.
func Sign(secret, body []byte) string {
	return "sha256=" + hex.EncodeToString(mac(secret, "", body))
}

// SignAt returns the value of HeaderSignatureV2 for body signed at at.
func SignAt(secret, body []byte, at time.Time) string {
	t := strconv.FormatInt(at.Unix(), 10)
	return "t=" + t + ",sha256=" + hex.EncodeToString(mac(secret, t+".", body))
}

func mac(secret []byte, prefix string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(prefix))
	m.Write(body)
	return m.Sum(nil)
}

// A VerifyOption adds a check to Verify and Check.
type VerifyOption func(*verifyOptions)

type verifyOptions struct {
	tolerance time.Duration
	now       func() time.Time
}

// Tolerance makes Verify accept only a timestamped signature
// (HeaderSignatureV2) whose timestamp lies within d of now: a captured
// delivery replayed later fails. DefaultTolerance suits most receivers.
func Tolerance(d time.Duration) VerifyOption {
	return func(o *verifyOptions) { o.tolerance = d }
}

// Now sets the clock Tolerance compares with (default time.Now).
func Now(now func() time.Time) VerifyOption {
	return func(o *verifyOptions) { o.now = now }
}

// ErrSignature matches (errors.Is) every error of Check.
var ErrSignature = errors.New("webhook signature refused")

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSignature, fmt.Sprintf(format, args...))
}

// Verify tells whether signature is a signature of body with secret, in
// constant time. signature is the value of HeaderSignatureV2 ("t=...,
// sha256=...") or of HeaderSignature ("sha256=..."). Without options it
// checks the signature alone, as it always did; with Tolerance it also
// requires a timestamp, covered by the signature, within the tolerance of
// now, which is what protects against replays:
//
//	webhook.Verify(secret, body, r.Header.Get(webhook.HeaderSignatureV2), webhook.Tolerance(webhook.DefaultTolerance))
func Verify(secret, body []byte, signature string, opts ...VerifyOption) bool {
	return Check(secret, body, signature, opts...) == nil
}

// Check is Verify that says why a signature is refused (ErrSignature).
func Check(secret, body []byte, signature string, opts ...VerifyOption) error {
	o := verifyOptions{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	hexSum, timed := signature, ""
	if rest, ok := strings.CutPrefix(signature, "t="); ok {
		var cut bool
		if timed, hexSum, cut = strings.Cut(rest, ","); !cut {
			return refused("%s is not t=<seconds>,sha256=<hex>", HeaderSignatureV2)
		}
	}
	hexSum, ok := strings.CutPrefix(hexSum, "sha256=")
	got, err := hex.DecodeString(hexSum)
	if !ok || err != nil {
		return refused("the signature is not sha256=<hex>")
	}
	if timed == "" {
		if o.tolerance > 0 {
			return refused("the signature has no timestamp: check %s, not %s", HeaderSignatureV2, HeaderSignature)
		}
		if !hmac.Equal(got, mac(secret, "", body)) {
			return refused("the signature does not match the body and the secret")
		}
		return nil
	}
	at, err := strconv.ParseInt(timed, 10, 64)
	if err != nil {
		return refused("the timestamp %q is not Unix seconds", timed)
	}
	if !hmac.Equal(got, mac(secret, timed+".", body)) {
		return refused("the signature does not match the timestamp, the body and the secret")
	}
	if o.tolerance > 0 {
		age := o.now().Sub(time.Unix(at, 0))
		if age > o.tolerance || -age > o.tolerance {
			return refused("the timestamp is %s off now, beyond the tolerance of %s: a replay, or a clock far off",
				age.Round(time.Second), o.tolerance)
		}
	}
	return nil
}
