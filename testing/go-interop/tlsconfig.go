package gointerop

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// LoadPair reads a PEM certificate and key, naming the file that failed.
func LoadPair(certFile, keyFile string) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading %s / %s: %w", certFile, keyFile, err)
	}
	return pair, nil
}

// LoadPool reads a PEM bundle (one or more CA certificates) into a pool.
func LoadPool(caFile string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", caFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	return pool, nil
}
