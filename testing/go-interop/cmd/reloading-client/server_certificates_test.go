package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

func leafWithSerial(t *testing.T, serial int64) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "file-provider"}, NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

func peerWith(leaf *x509.Certificate) *peer.Peer {
	return &peer.Peer{AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}}}
}

func TestFirstSightReportsEachServerCertificateOnce(t *testing.T) {
	old, rotated := leafWithSerial(t, 0xa1), leafWithSerial(t, 0xb2)
	at := time.Date(2026, 11, 27, 13, 0, 0, 123456789, time.UTC)
	s := newServerCertificates()
	var lines []serverCertificate
	// Calls on the old connection, then the new leaf after a reconnect, then the old one again
	// (another replica behind the Service): only first sights are lines.
	for _, leaf := range []*x509.Certificate{old, old, rotated, rotated, old} {
		if line, isNew := s.firstSight(peerWith(leaf), at); isNew {
			lines = append(lines, line)
		}
	}
	if len(lines) != 2 || lines[0].Serial != "a1" || lines[1].Serial != "b2" {
		t.Fatalf("want first sights of a1 then b2, got %+v", lines)
	}
	if lines[1].Event != "server_certificate" || lines[1].At != "2026-11-27T13:00:00.123456789Z" || len(lines[1].SHA256) != 64 {
		t.Fatalf("unexpected line %+v", lines[1])
	}
}

func TestFirstSightIgnoresCallsWithoutAServerCertificate(t *testing.T) {
	s := newServerCertificates()
	for _, p := range []*peer.Peer{nil, {}, {AuthInfo: credentials.TLSInfo{}}} {
		if line, isNew := s.firstSight(p, time.Now()); isNew {
			t.Fatalf("reported %+v for a call with no server certificate", line)
		}
	}
}
