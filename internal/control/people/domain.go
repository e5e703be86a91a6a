// Package people holds the rules of who may act in a tenant, and how they
// prove it: tenants and their plans, members and project members, API
// tokens and their authentication, invitations, passphrases and sessions,
// single sign-on, and the CLI's sign-in through the browser.
package people

import "github.com/nebulactrl/nebula/internal/control/core"

// People is the domain of people and their access, over the core.
type People struct {
	*core.Plane
	// tokens keeps the API tokens presented lately.
	tokens *tokenCache
	// signins holds the accounts whose sign-in is being checked.
	signins inFlight
}

// New is the people domain over c.
func New(c *core.Plane) *People {
	p := &People{Plane: c, tokens: newTokenCache()}
	// A change of access here or on another replica drops the tokens it
	// concerns.
	c.ObserveNotes(p.tokens.noted)
	return p
}
