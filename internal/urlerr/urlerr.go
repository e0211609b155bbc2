// Package urlerr takes the URL out of the errors net/url and net/http
// return, for messages and logs: the URL may carry a password or a
// token, and the message that wraps the error names the place already.
package urlerr

import (
	"errors"
	"net/url"
)

// Cause returns the error a *url.Error wraps ("Post \"...\": " and the URL
// dropped), or err itself when it wraps none.
func Cause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
