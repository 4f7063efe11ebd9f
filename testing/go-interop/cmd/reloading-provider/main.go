// Command reloading-provider is a provider written in Go as docs/provider-developers.md shows it:
// it serves provider.v1 over mTLS from the mounted folder -cert-dir (a Secret, or with
// -cert-layout=pod-certificate a podCertificate and clusterTrustBundle projection), swapping in every
// new good pair and bundle without a restart and keeping the last good one when a new version is
// refused. Each load, reload and refusal is one JSON line on stdout; "HEALTH <host:port>" once
// /healthz and /readyz (plain HTTP) listen, "LISTENING <host:port>" once gRPC does. It serves
// until SIGTERM (the kubelet's stop) or SIGINT (Ctrl-C); stdin is not read, as a container's is
// closed from the start.
package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	gointerop "eso-mtls/testing/go-interop"
	pb "eso-mtls/testing/go-interop/gen/providerv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// secrets is the provider's backend: a fixed map, as this program is about TLS.
type secrets struct {
	pb.UnimplementedSecretStoreProviderServer
	values map[string][]byte
}

func (s *secrets) GetSecret(_ context.Context, r *pb.GetSecretRequest) (*pb.GetSecretResponse, error) {
	v, ok := s.values[r.GetRemoteRef().GetKey()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "secret %s does not exist", r.GetRemoteRef().GetKey())
	}
	return &pb.GetSecretResponse{Value: v}, nil
}

func (s *secrets) GetSecretMap(ctx context.Context, r *pb.GetSecretMapRequest) (*pb.GetSecretMapResponse, error) {
	got, err := s.GetSecret(ctx, &pb.GetSecretRequest{RemoteRef: r.GetRemoteRef()})
	if err != nil {
		return nil, err
	}
	return &pb.GetSecretMapResponse{Secrets: map[string][]byte{r.GetRemoteRef().GetKey(): got.GetValue()}}, nil
}

func main() {
	addr := flag.String("addr", ":8080", "gRPC (mTLS) listen address")
	healthAddr := flag.String("health-addr", ":8081", "plain-HTTP /healthz and /readyz listen address")
	certDir := flag.String("cert-dir", "/etc/provider/certs", "the mounted Secret external-secrets-provider-tls, or the pod-certificate projection")
	certLayout := flag.String("cert-layout", string(gointerop.LayoutSecret), "what -cert-dir holds: secret (ca.crt, tls.crt, tls.key) or pod-certificate (credentials.pem and ca.crt, projected by the kubelet)")
	poll := flag.Duration("poll", 10*time.Second, "re-read period, in case a folder event is lost")
	maxAge := flag.Duration("max-connection-age", 20*time.Minute, "connections are closed (GOAWAY) after this long")
	grace := flag.Duration("max-connection-age-grace", 10*time.Minute, "time calls get to finish after that; at least the longest call deadline")
	flag.Parse()
	layout, err := gointerop.ParseLayout(*certLayout)
	if err == nil {
		err = run(*addr, *healthAddr, *certDir, layout, *poll, *maxAge, *grace)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "reloading-provider:", err)
		os.Exit(1)
	}
}

func run(addr, healthAddr, certDir string, layout gointerop.Layout, poll, maxAge, grace time.Duration) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logLine := json.NewEncoder(os.Stdout)
	// doc:begin provider-watch
	watcher := gointerop.NewCertificateWatcher(certDir, layout, x509.ExtKeyUsageServerAuth, func(e gointerop.Event) {
		_ = logLine.Encode(e) // and count e.Kind in your metrics: reloads and refusals
	})
	go func() { _ = watcher.Run(ctx, poll) }()

	// The kubelet cannot present a client certificate: probes are plain HTTP on their own port.
	probes := http.NewServeMux()
	probes.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	probes.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if watcher.Current() == nil {
			http.Error(w, "waiting for a good certificate in "+certDir, http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	// doc:end provider-watch
	healthLis, err := net.Listen("tcp", healthAddr)
	if err != nil {
		return err
	}
	fmt.Printf("HEALTH %s\n", healthLis.Addr())
	go func() { _ = http.Serve(healthLis, probes) }()

	// doc:begin provider-serve
	<-watcher.Ready() // until the certificate is issued and mounted, /readyz says why we wait
	srv := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(gointerop.ServerTLSConfig(watcher))),
		grpc.UnaryInterceptor(gointerop.RequireESOClient),
		// Every connection ends within age + grace, so none outlives the material it was made with
		// by more than that: the policy's maxConnectionAge (30 min), which CA retirement waits for.
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: maxAge, MaxConnectionAgeGrace: grace}),
		// ESO core pings every 10 s without a read, calls or none, to leave a provider that fell
		// silent (docs/connections-and-rotation.md); grpc-go's default policy would close an idle
		// connection with GOAWAY too_many_pings at the third ping.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	)
	pb.RegisterSecretStoreProviderServer(srv, &secrets{values: map[string][]byte{"db/password": []byte("hunter2")}})
	hs := health.NewServer() // grpc.health.v1, which ESO core asks over mTLS
	hs.SetServingStatus("provider.v1.SecretStoreProvider", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	// doc:end provider-serve
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("LISTENING %s\n", lis.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		srv.Stop()
	}()
	return srv.Serve(lis)
}
