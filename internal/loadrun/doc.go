// Package loadrun is the whole-system load run of docs/benchmarks.md
// (issue 16): control-plane replicas as separate processes on one
// PostgreSQL, driven over loopback by simulated agents speaking the agent
// protocol, GraphQL subscribers, and mutations and queries sent at fixed
// open-loop rates, with latencies per operation and the CPU and memory of
// each process.
//
// The driver is a library; TestSystemLoad (make load) wires it to a
// throwaway PostgreSQL and the nebula binary. It is for measuring only and
// must never be imported by production code. It talks to the control
// plane through its public endpoints alone, after seeding through the
// domain layer.
//
// It reads /proc and asks the kernel to end the replicas with the driver
// (Pdeathsig), so it builds on Linux only.
package loadrun
