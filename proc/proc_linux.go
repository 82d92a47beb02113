package proc

import (
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
)

// HostID identifies this machine's current boot and this process's PID
// namespace: two processes with the same hostID see the same PIDs, so one
// can tell whether the other is alive. It is "" when either cannot be read.
// Neither changes while the process lives, so they are read once.
func HostID() string { return hostID() }

var hostID = sync.OnceValue(readHostID)

func readHostID() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
}

// Alive reports whether process pid exists (a process of another
// user counts).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
