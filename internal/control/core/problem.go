package core

import (
	"errors"
	"slices"
	"strings"
)

// Code classifies a problem the caller can fix.
type Code string

const (
	CodeInvalid     Code = "BAD_USER_INPUT"
	CodeConflict    Code = "CONFLICT"
	CodeEntitlement Code = "ENTITLEMENT_REQUIRED"
	// CodeForbidden: the change is another role's decision.
	CodeForbidden Code = "FORBIDDEN"
)

// Problem is one thing wrong with a request, said so that the caller can
// fix it. Its message never contains a secret.
type Problem struct {
	Field   []string
	Message string
	Code    Code
}

func (p Problem) Error() string { return p.Message }

// Problems is every problem found with one request.
type Problems []Problem

func (ps Problems) Error() string {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Message
	}
	return strings.Join(msgs, "; ")
}

// AsProblems returns the problems err carries, if it is a user error.
func AsProblems(err error) (Problems, bool) {
	var ps Problems
	if errors.As(err, &ps) {
		return ps, true
	}
	var p Problem
	if errors.As(err, &p) {
		return Problems{p}, true
	}
	return nil, false
}

// Invalid builds a BAD_USER_INPUT problem about an input field path.
func Invalid(message string, field ...string) Problem {
	return Problem{Field: field, Message: message, Code: CodeInvalid}
}

// Checks collects validation problems.
type Checks struct{ ps Problems }

func (c *Checks) Add(p Problem) { c.ps = append(c.ps, p) }

func (c *Checks) Err() error {
	if len(c.ps) == 0 {
		return nil
	}
	return c.ps
}

func sortStrings(s []string) { slices.Sort(s) }

// NotFoundOn reports a missing referenced object as a user error on field.
func NotFoundOn(err error, fieldName, message string) error {
	if IsNotFound(err) {
		return Invalid(message, "input", fieldName)
	}
	return err
}

// NeedsApproval refuses a direct change that would change what a protected
// environment runs: such a change is a change set of one, which waits for
// an approval (package changesets). Environments names them.
type NeedsApproval struct{ Environments []string }

func (n *NeedsApproval) Error() string {
	return "the change reaches protected environment(s) " + strings.Join(n.Environments, ", ") + ": it waits for an approval as a change set"
}

// AsNeedsApproval returns the NeedsApproval err carries, if any.
func AsNeedsApproval(err error) (*NeedsApproval, bool) {
	var n *NeedsApproval
	return n, errors.As(err, &n)
}
