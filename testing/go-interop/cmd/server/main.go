// Command server is a provider written in Go: it serves provider.v1 and grpc.health.v1 from
// an in-memory store over mTLS, requiring a client certificate from -ca with CN
// external-secrets-core. It prints "LISTENING <host:port>" and serves until stdin closes.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"

	gointerop "eso-mtls/testing/go-interop"
	pb "eso-mtls/testing/go-interop/gen/providerv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

type store struct {
	pb.UnimplementedSecretStoreProviderServer
	mu      sync.Mutex
	secrets map[string][]byte
	pushed  []*pb.PushSecretRequest
}

func (s *store) get(key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.secrets[key]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "secret %s does not exist", key)
	}
	return v, nil
}

func (s *store) GetSecret(_ context.Context, r *pb.GetSecretRequest) (*pb.GetSecretResponse, error) {
	v, err := s.get(r.GetRemoteRef().GetKey())
	if err != nil {
		return nil, err
	}
	return &pb.GetSecretResponse{Value: v}, nil
}

func (s *store) GetSecretMap(_ context.Context, r *pb.GetSecretMapRequest) (*pb.GetSecretMapResponse, error) {
	v, err := s.get(r.GetRemoteRef().GetKey())
	if err != nil {
		return nil, err
	}
	return &pb.GetSecretMapResponse{Secrets: map[string][]byte{r.GetRemoteRef().GetKey(): v}}, nil
}

func (s *store) PushSecret(_ context.Context, r *pb.PushSecretRequest) (*pb.PushSecretResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range r.GetSecretData() {
		s.secrets[r.GetPushSecretData().GetRemoteKey()+"/"+k] = v
	}
	return &pb.PushSecretResponse{}, nil
}

func (s *store) DeleteSecret(_ context.Context, r *pb.DeleteSecretRequest) (*pb.DeleteSecretResponse, error) {
	if _, err := s.get(r.GetRemoteRef().GetRemoteKey()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.secrets, r.GetRemoteRef().GetRemoteKey())
	return &pb.DeleteSecretResponse{}, nil
}

func (s *store) SecretExists(_ context.Context, r *pb.SecretExistsRequest) (*pb.SecretExistsResponse, error) {
	_, err := s.get(r.GetRemoteRef().GetRemoteKey())
	return &pb.SecretExistsResponse{Exists: err == nil}, nil
}

func (s *store) GetAllSecrets(_ context.Context, r *pb.GetAllSecretsRequest) (*pb.GetAllSecretsResponse, error) {
	re, err := regexp.Compile(r.GetFind().GetName().GetRegexp())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "find.name.regexp %q: %v", r.GetFind().GetName().GetRegexp(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range s.secrets {
		if strings.HasPrefix(k, r.GetFind().GetPath()) && re.MatchString(k) {
			out[k] = v
		}
	}
	return &pb.GetAllSecretsResponse{Secrets: out}, nil
}

func (s *store) Validate(_ context.Context, r *pb.ValidateRequest) (*pb.ValidateResponse, error) {
	if r.GetSourceNamespace() == "forbidden" {
		return &pb.ValidateResponse{Valid: false, Error: "namespace forbidden may not use this store", Warnings: []string{"w1", "w2"}}, nil
	}
	return &pb.ValidateResponse{Valid: true}, nil
}

func (s *store) Capabilities(context.Context, *pb.CapabilitiesRequest) (*pb.CapabilitiesResponse, error) {
	return &pb.CapabilitiesResponse{Capabilities: pb.SecretStoreCapabilities_READ_WRITE}, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	caFile := flag.String("ca", "", "CA bundle that client certificates must chain to")
	certFile := flag.String("cert", "", "server certificate")
	keyFile := flag.String("key", "", "server key")
	flag.Parse()
	pair, err := gointerop.LoadPair(*certFile, *keyFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
	pool, err := gointerop.LoadPool(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13}
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)), grpc.UnaryInterceptor(gointerop.RequireESOClient))
	pb.RegisterSecretStoreProviderServer(srv, &store{secrets: map[string][]byte{"db/password": []byte("hunter2"), "db/user": []byte("admin"), "web/token": {0, 255}}})
	hs := health.NewServer()
	hs.SetServingStatus("provider.v1.SecretStoreProvider", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	fmt.Printf("LISTENING %s\n", lis.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		srv.Stop()
	}()
	if err := srv.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}
