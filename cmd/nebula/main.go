// Command nebula is the NebulaCtrl control plane and its in-cluster agent.
// main only wires: everything else is in internal/cli.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/nebulactrl/nebula/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "nebula:", err)
		os.Exit(cli.ExitCode(err))
	}
}
