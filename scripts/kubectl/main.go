// Wrapper module: builds kubectl from the Go module proxy for scripts/ensure-kubectl.sh.
// k8s.io/kubectl ships kubectl's commands but no main package; this is upstream's
// cmd/kubectl/kubectl.go (k8s.io/kubernetes), which cannot be built with `go install`
// because k8s.io/kubernetes has replace lines.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	// Client auth plugins, as upstream's kubectl links them.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) // nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
