package main

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	gointerop "eso-mtls/testing/go-interop"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// serverCertificate is the line printed for the first call that handshook with a provider
// certificate this client had not seen before: when a rotated leaf was first in use.
type serverCertificate struct {
	Event  string `json:"event"` // server_certificate
	Serial string `json:"serial"`
	SHA256 string `json:"sha256"` // of the leaf's DER, for leaves whose serials collide
	At     string `json:"at"`
}

// serverCertificates remembers every provider leaf seen so far, so that each is reported once:
// a line per certificate, never per call, keeps a pod's log bounded by the provider's rotations.
type serverCertificates struct{ seen map[[sha256.Size]byte]bool }

func newServerCertificates() *serverCertificates {
	return &serverCertificates{seen: map[[sha256.Size]byte]bool{}}
}

// firstSight is the line for the leaf a successful call's connection presented, if it is new.
func (s *serverCertificates) firstSight(p *peer.Peer, at time.Time) (serverCertificate, bool) {
	if p == nil {
		return serverCertificate{}, false
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return serverCertificate{}, false
	}
	leaf := info.State.PeerCertificates[0]
	sum := sha256.Sum256(leaf.Raw)
	if s.seen[sum] {
		return serverCertificate{}, false
	}
	s.seen[sum] = true
	return serverCertificate{
		Event:  "server_certificate",
		Serial: gointerop.SerialHex(leaf),
		SHA256: hex.EncodeToString(sum[:]),
		At:     at.UTC().Format(time.RFC3339Nano),
	}, true
}
