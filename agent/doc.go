// Package agent is the in-cluster agent (`nebula agent`). It runs as two
// replicas in each cluster; the one holding the Lease keeps one outbound
// websocket to the control plane (docs/agent-protocol.md), applies the
// revisioned desired state it receives with server-side apply, prunes what
// it manages and the state no longer has, runs queued commands, and reports
// heartbeats with its inventory.
//
// It keeps an import boundary (boundary_test.go): it never links the
// control plane's store, API, authorization or domain layer — only the
// protocol and the desired-state types both sides share.
package agent
