// Command reloading-client calls a provider as ESO core would, for as long as stdin stays open:
// GetSecret back to back on one grpc.ClientConn, presenting the newest good client certificate
// of -cert-dir (the mounted Secret, or with -cert-layout=pod-certificate the pod's own
// credentials.pem and ca.crt) and verifying the provider against its newest ca.crt and the host
// of -addr. Each load, reload and refusal of -cert-dir is one JSON line on stdout, then
// "READY"; each of the first 5 failed calls (in a pod: every one) as
// {"event":"call_failed","error":..,"at":..}; the first call that handshook with each provider
// certificate not seen before as {"event":"server_certificate","serial":..,"sha256":..,"at":..};
// when stdin closes, one summary line: {"event":"summary","calls":..,"failed":..}.
//
// In a pod (-report-every > 0) stdin is not used: it calls until SIGTERM or SIGINT, pausing
// -interval between calls, and prints the running totals as {"event":"progress",..} every
// -report-every, so a test reads them from the pod's log while it runs.
package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	gointerop "eso-mtls/testing/go-interop"
	pb "eso-mtls/testing/go-interop/gen/providerv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/peer"
)

func main() {
	addr := flag.String("addr", "", "provider address as ESO is given it, <service>.<namespace>.svc:<port>")
	connectTo := flag.String("connect-to", "", "dial this host:port instead, still verifying the host of -addr (tests, port-forwards)")
	certDir := flag.String("cert-dir", "/etc/eso/client-certs", "the mounted client Secret eso-provider-client-tls, or the pod-certificate projection")
	certLayout := flag.String("cert-layout", string(gointerop.LayoutSecret), "what -cert-dir holds: secret (ca.crt, tls.crt, tls.key) or pod-certificate (credentials.pem and ca.crt, projected by the kubelet)")
	key := flag.String("key", "db/password", "remoteRef.key to read")
	poll := flag.Duration("poll", 10*time.Second, "re-read period, in case a folder event is lost")
	reportEvery := flag.Duration("report-every", 0, "in a pod: print running totals this often and run until SIGTERM instead of until stdin closes")
	interval := flag.Duration("interval", 0, "pause between calls")
	flag.Parse()
	layout, err := gointerop.ParseLayout(*certLayout)
	if err == nil {
		err = run(*addr, *connectTo, *certDir, layout, *key, *poll, *reportEvery, *interval)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "reloading-client:", err)
		os.Exit(1)
	}
}

type summary struct {
	Event    string   `json:"event"`
	At       string   `json:"at"`
	Calls    int      `json:"calls"`
	Failed   int      `json:"failed"`
	Failures []string `json:"failures"` // the first few
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// stopSignal closes when the run should end: stdin closing, or in a pod SIGTERM/SIGINT.
func stopSignal(inPod bool) <-chan struct{} {
	stopped := make(chan struct{})
	if inPod {
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
		go func() {
			<-signals
			close(stopped)
		}()
		return stopped
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stopped)
	}()
	return stopped
}

func run(addr, connectTo, certDir string, layout gointerop.Layout, key string, poll, reportEvery, interval time.Duration) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out sync.Mutex // event lines come from the watcher's goroutine
	emit := func(v any) {
		out.Lock()
		defer out.Unlock()
		_ = json.NewEncoder(os.Stdout).Encode(v)
	}
	// doc:begin client-main
	watcher := gointerop.NewCertificateWatcher(certDir, layout, x509.ExtKeyUsageClientAuth, func(e gointerop.Event) { emit(e) })
	go func() { _ = watcher.Run(ctx, poll) }()
	<-watcher.Ready()

	serverName, err := gointerop.ServerNameOf(addr) // e.g. file-provider.provider-system.svc
	if err != nil {
		return err
	}
	target := addr
	if connectTo != "" {
		target = connectTo // the certificate is still verified against serverName
	}
	// One ClientConn for the provider's lifetime: rotations need no new one. Each new connection
	// (after the provider's GOAWAY at its maximum age, say) handshakes with the newest material.
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(credentials.NewTLS(gointerop.ClientTLSConfig(watcher, serverName))),
		// A provider pod on a lost node never answers nor resets its connections. Without pings,
		// calls on a connection to it time out one after another until TCP gives up (about 15
		// minutes), long after the Service has a live endpoint. A ping unanswered for 10 s after
		// 10 s without a read closes it; the next connection goes through the Service again.
		// Providers on @eso-mtls/grpc accept these pings, calls or none.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}),
		// grpc-go's default waits up to 120 s between reconnects: a provider back after minutes
		// away would keep failing calls that long. 20 s per attempt is grpc-go's default.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
			MinConnectTimeout: 20 * time.Second,
		}),
	)
	if err != nil {
		return err
	}
	defer conn.Close()
	provider := pb.NewSecretStoreProviderClient(conn)
	// doc:end client-main
	out.Lock()
	fmt.Println("READY")
	out.Unlock()

	stopped := stopSignal(reportEvery > 0)
	s := summary{Event: "summary", Failures: []string{}}
	served := newServerCertificates()
	var report <-chan time.Time
	if reportEvery > 0 {
		ticker := time.NewTicker(reportEvery)
		defer ticker.Stop()
		report = ticker.C
	}
	// The first call goes at once, each next one -interval after the last ended; stopping cuts a pause short.
	pause := time.Duration(0)
	for {
		select {
		case <-stopped:
			s.At = now()
			emit(s)
			return nil
		case <-report:
			progress := s
			progress.Event, progress.At = "progress", now()
			emit(progress)
		default:
		}
		if pause > 0 {
			select {
			case <-stopped:
				continue // the summary, above
			case <-time.After(pause):
			}
		}
		pause = interval
		callCtx, done := context.WithTimeout(ctx, 10*time.Second)
		var from peer.Peer
		_, err := provider.GetSecret(callCtx, &pb.GetSecretRequest{RemoteRef: &pb.ExternalSecretDataRemoteRef{Key: key}}, grpc.Peer(&from))
		done()
		s.Calls++
		if err == nil {
			if line, isNew := served.firstSight(&from, time.Now()); isNew {
				emit(line)
			}
		} else {
			s.Failed++
			if len(s.Failures) < 5 {
				s.Failures = append(s.Failures, err.Error())
			}
			// In a pod every failure is a line, with its time, so a test can tell which fault's
			// window it fell in; the kubelet's log rotation bounds them.
			if len(s.Failures) <= 5 || reportEvery > 0 {
				emit(map[string]string{"event": "call_failed", "error": err.Error(), "at": now()})
			}
		}
	}
}
