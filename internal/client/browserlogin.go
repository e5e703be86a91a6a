package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// BrowserLogin signs the CLI in through the browser, a device
// authorization (RFC 8628): it starts a sign-in at the control plane at
// base, tells show the code and the page where a person signed in to the
// console confirms it, then polls until they did and returns the personal
// API token made for them. It gives up when the sign-in expires (10
// minutes) or ctx ends.
func BrowserLogin(ctx context.Context, base string, trust *tls.Config, show func(code, link string)) (string, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("the control plane's URL %q must be http:// or https:// and a host", base)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if trust != nil {
		tr.TLSClientConfig = trust.Clone()
	}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(path string, body any, out any) (int, error) {
		b, _ := json.Marshal(body)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String()+path, bytes.NewReader(b))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "nebula-cli")
		resp, err := hc.Do(req)
		if err != nil {
			return 0, unreachable(u, err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
	}
	var started struct {
		Code, Secret, VerificationURL string
		Interval                      int
		ExpiresAt                     time.Time
		Errors                        []struct{ Message string }
	}
	status, err := post("/auth/cli/start", map[string]string{}, &started)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK || started.Secret == "" {
		if len(started.Errors) > 0 {
			return "", &Error{Code: fmt.Sprintf("HTTP_%d", status), Message: started.Errors[0].Message}
		}
		return "", fmt.Errorf("starting the sign-in: HTTP %d (is this a NebulaCtrl control plane?)", status)
	}
	show(started.Code, started.VerificationURL)
	every := time.Duration(max(started.Interval, 1)) * time.Second
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(every):
		}
		var polled struct{ Status, Token, Message string }
		status, err := post("/auth/cli/token", map[string]string{"secret": started.Secret}, &polled)
		switch {
		case err != nil && ctx.Err() != nil:
			return "", ctx.Err()
		case err != nil:
			continue // the control plane away for a moment: the sign-in waits
		case status == http.StatusOK && polled.Token != "":
			return polled.Token, nil
		case status == http.StatusAccepted:
			if time.Now().After(started.ExpiresAt) {
				return "", errors.New("the sign-in expired before its code was confirmed; start again")
			}
		case status == http.StatusGone:
			return "", errors.New(polled.Message)
		case status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests:
		default:
			return "", fmt.Errorf("waiting for the confirmation: HTTP %d %s", status, polled.Message)
		}
	}
}
