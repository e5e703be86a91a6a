package model

import "time"

// CLILoginID names a sign-in of the CLI through the browser.
type CLILoginID string

// A CLILogin is the CLI waiting for a person to confirm, in the console,
// the code it shows (nebula login --web). Once confirmed it holds the
// personal API token made for them, sealed, until the CLI picks it up.
type CLILogin struct {
	ID CLILoginID
	// Code is what the CLI shows and the person confirms: XXXX-XXXX.
	Code string
	// SecretHash is the hash of the secret only the CLI holds, which it
	// polls with.
	SecretHash    []byte
	ClientAddress string
	// AddressKey is what the address counts against: the address, or an
	// IPv6 address's /64.
	AddressKey string
	UserAgent  string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	// Set once a person confirmed it: for whom, in which tenant, the
	// token made and its secret (sealed).
	TenantID    *TenantID
	UserID      *UserID
	TokenID     *TokenID
	SealedToken string
	ApprovedAt  *time.Time
}

// Binding binds the sealed token to the login.
func (l *CLILogin) Binding() string { return "cli_login:" + string(l.ID) }
