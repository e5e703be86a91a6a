//go:build unix && !linux

package pgtest

import "syscall"

// procAttr runs a child as own (when set). Only Linux can tie the child's
// life to this process; elsewhere Main's cleanup is the only stop.
func procAttr(own *owner) *syscall.SysProcAttr {
	if own == nil {
		return nil
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(own.uid), Gid: uint32(own.gid)}}
}
