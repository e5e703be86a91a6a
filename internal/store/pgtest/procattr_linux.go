package pgtest

import "syscall"

// procAttr runs a child as own (when set) and has the kernel send it
// SIGQUIT, PostgreSQL's immediate shutdown, if this process dies first.
func procAttr(own *owner) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGQUIT}
	if own != nil {
		a.Credential = &syscall.Credential{Uid: uint32(own.uid), Gid: uint32(own.gid)}
	}
	return a
}
