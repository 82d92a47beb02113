// Package proc tells processes of one machine apart: an identity of the
// machine's boot and PID namespace, and whether a process there is alive.
// Leases record both, so that a process can tell at once that the holder of
// a lease on its own machine is gone, without waiting for the lease to
// expire.
package proc
