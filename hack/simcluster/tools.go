//go:build tools

// Package tools pins the Kubernetes control-plane commands that build.sh
// compiles from this module, so `go mod tidy` keeps them in go.mod/go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
