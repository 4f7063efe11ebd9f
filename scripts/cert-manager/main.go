// Wrapper main of scripts/ensure-cert-manager.sh: cert-manager's controller, built from the Go
// module proxy. Upstream's own main lives in the module
// github.com/cert-manager/cert-manager/cmd/controller, which the proxy does not serve (404), so
// this main runs controllers of the main module with the defaults of its
// internal/apis/config/controller/v1alpha1/defaults.go, the way its cmd/controller/app does;
// without leader election, metrics, health or pprof servers.
//
// Which controllers are linked in is the build's choice (controllers_*.go): upstream's default set
// for bench/cert-manager.bench.ts, or with the tag tests_only the few the test suite needs, which
// compiles in a fraction of the time (no ACME DNS providers, no Vault).
//
// The Venafi issuer and its controller are left out: the proxy refuses github.com/Venafi/vcert/v5
// (403), and upstream's defaults package imports it, so the defaults are restated below.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

// Upstream's defaults (internal/apis/config/controller/v1alpha1/defaults.go).
const concurrentWorkers = 5

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the apiserver to run against")
	enabled := flag.String("controllers", strings.Join(defaultControllers, ","), "controllers to run")
	clusterResourceNamespace := flag.String("cluster-resource-namespace", "kube-system", "namespace of ClusterIssuer secrets")
	flag.Parse()
	if err := run(*kubeconfig, strings.Split(*enabled, ","), *clusterResourceNamespace); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager controller:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, enabled []string, clusterResourceNamespace string) error {
	logf.InitLogs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "controller")

	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20, // client-side limits apply only when the apiserver lacks priority and fairness
		KubernetesAPIBurst: 50,
		IssuerOptions: controllerpkg.IssuerOptions{
			ClusterResourceNamespace:        clusterResourceNamespace,
			ClusterIssuerAmbientCredentials: true,
		},
		CertificateOptions: controllerpkg.CertificateOptions{
			CopiedAnnotationPrefixes:                 []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
		SchedulerOptions: controllerpkg.SchedulerOptions{MaxConcurrentChallenges: 60},
	})
	if err != nil {
		return err
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}

	known := controllerpkg.Known()
	g, gctx := errgroup.WithContext(ctx)
	for _, name := range enabled {
		construct, ok := known[name]
		if !ok {
			return fmt.Errorf("unknown controller %q", name)
		}
		c, err := construct(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		g.Go(func() error { return c.Run(concurrentWorkers, gctx) })
	}
	// Informers the constructors registered start only now, as in upstream.
	shared.HTTP01ResourceMetadataInformersFactory.Start(gctx.Done())
	shared.KubeSharedInformerFactory.Start(gctx.Done())
	shared.SharedInformerFactory.Start(gctx.Done())
	return g.Wait()
}
