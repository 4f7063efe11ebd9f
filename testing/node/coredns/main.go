// CoreDNS for the real node, with only the plugins the node's Corefile names (corefile() in
// packages/controller/src/cluster/node/configs.ts): CoreDNS's own main imports all ~60 plugins,
// and their cloud SDKs (AWS, Azure, Google, Datadog) were over half of this build's ~1,400
// packages. coremain.Run is CoreDNS's own entry point, and dnsserver keeps upstream's directive
// order; a Corefile naming a plugin missing here fails at start ("no action found for directive
// 'forward' with server type 'dns' (missing a plugin?)"), so add its import here when configs.ts
// starts using one.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }
