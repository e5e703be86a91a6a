// Package agent will be the in-cluster agent: it connects outbound to the
// control plane, receives revisioned desired state, applies it with
// client-go and reports back. It is built in a later issue; today this
// package only holds the import boundary that the agent must keep (see
// boundary_test.go): it never imports the store, the resolvers or authz.
package agent
