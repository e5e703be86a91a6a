// Command etcd is a thin wrapper around etcd's own main package, so that the
// simulated cluster's etcd is built from the same module graph as Kubernetes.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
