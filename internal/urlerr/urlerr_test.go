package urlerr

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestCauseDropsTheURL(t *testing.T) {
	inner := errors.New("connection refused")
	err := fmt.Errorf("posting: %w", &url.Error{Op: "Post", URL: "https://user:secret@example.test/hook", Err: inner})
	if got := Cause(err); got != inner {
		t.Fatalf("Cause = %v, want the wrapped error", got)
	}
	if strings.Contains(Cause(err).Error(), "secret") {
		t.Fatal("the URL's password is in the message")
	}
	plain := errors.New("plain")
	if Cause(plain) != plain {
		t.Fatal("an error without a URL changed")
	}
}
