//go:build !linux

package proc

// HostID is "" where this package cannot tell processes apart by PID: the
// holders of leases on this machine are then found gone by their leases'
// expiry only.
func HostID() string { return "" }

// Alive reports true: without HostID, no process is known to be gone.
func Alive(int) bool { return true }
