// Command pause is the process of a pod's sandbox, in place of registry.k8s.io/pause (no registry
// is reachable here): it holds the pod's namespaces by staying alive, reaps the orphans a PID 1
// inherits, and exits 0 on SIGINT or SIGTERM, as the real one does.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		// One SIGCHLD may stand for several children: reap all that have exited.
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
