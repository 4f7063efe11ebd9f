package gointerop

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Event is one judged change of a watched folder, for logs and metrics. It carries reasons,
// serials and dates, never PEM or key bytes.
type Event struct {
	Kind     string    `json:"event"`            // loaded (the first good material), reloaded, refused
	Reason   string    `json:"reason,omitempty"` // refused: what was wrong (key_mismatch, expired, ...)
	Detail   string    `json:"detail,omitempty"` // refused: the message, naming the file
	Serial   string    `json:"serial,omitempty"` // the leaf in use after the event; empty before the first load
	NotAfter time.Time `json:"notAfter,omitzero"`
	CAs      int       `json:"cas,omitempty"` // CA certificates of ca.crt in use
}

// doc:begin watcher

// CertificateWatcher keeps the newest good material of one mounted folder: tls.crt, tls.key and
// ca.crt of a Secret, or credentials.pem and ca.crt of a pod certificate. A new version replaces
// the one in use only once CheckMaterial accepts it; anything unusable is reported once and the
// last good material keeps being used.
type CertificateWatcher struct {
	dir     string
	layout  Layout           // LayoutSecret, or LayoutPodCertificate for a podCertificate projection
	purpose x509.ExtKeyUsage // ExtKeyUsageServerAuth for a provider, ExtKeyUsageClientAuth for ESO
	onEvent func(Event)

	current   atomic.Pointer[Material] // read by every handshake, lock-free
	mu        sync.Mutex               // one check at a time
	refused   string                   // the problem reported last, so a poll does not repeat it
	ready     chan struct{}
	readyOnce sync.Once
}

// NewCertificateWatcher watches dir, which holds layout; onEvent (called from the watching
// goroutine) may log or count.
func NewCertificateWatcher(dir string, layout Layout, purpose x509.ExtKeyUsage, onEvent func(Event)) *CertificateWatcher {
	return &CertificateWatcher{dir: dir, layout: layout, purpose: purpose, onEvent: onEvent, ready: make(chan struct{})}
}

// Current is the material in use, nil until the first good load.
func (w *CertificateWatcher) Current() *Material { return w.current.Load() }

// Ready is closed once good material is loaded: serve (or report ready) only after it.
func (w *CertificateWatcher) Ready() <-chan struct{} { return w.ready }

// Run watches the folder until ctx ends. The kubelet never rewrites a mounted file: it renames
// the `..data` symlink, so the folder is watched (a watch on a file would keep watching the old
// inode), and it is re-read every poll in case an event is lost or the folder was replaced.
func (w *CertificateWatcher) Run(ctx context.Context, poll time.Duration) error {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fsw.Close()
	_ = fsw.Add(w.dir) // may not exist yet: the poll retries
	w.Check()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-fsw.Events:
			drain(fsw.Events) // one swap is a burst of events: read once
			w.Check()
		case <-fsw.Errors:
		case <-tick.C:
			if len(fsw.WatchList()) == 0 {
				_ = fsw.Add(w.dir)
			}
			w.Check()
		}
	}
}

// Check reads the folder and swaps in what it holds if that is new and good.
func (w *CertificateWatcher) Check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	files, err := ReadFolder(w.dir, w.layout)
	var next *Material
	if err == nil {
		if cur := w.current.Load(); cur != nil && cur.files.equal(files) {
			w.refused = "" // back to what is served: a later refusal is news again
			return
		}
		next, err = CheckMaterial(files, w.purpose, time.Now())
	}
	if err != nil {
		if problem := problemOf(err, files); problem != w.refused {
			w.refused = problem
			w.emit(Event{Kind: "refused", Reason: reasonOf(err), Detail: err.Error()})
		}
		return
	}
	previous := w.current.Swap(next)
	w.refused = ""
	if previous == nil {
		w.readyOnce.Do(func() { close(w.ready) })
		w.emit(Event{Kind: "loaded"})
		return
	}
	w.emit(Event{Kind: "reloaded"})
}

// doc:end watcher

// emit completes e with what is in use after it (nothing, before the first load).
func (w *CertificateWatcher) emit(e Event) {
	if m := w.current.Load(); m != nil {
		e.Serial, e.NotAfter, e.CAs = SerialHex(m.Certificate.Leaf), m.Certificate.Leaf.NotAfter.UTC(), len(m.CACertificates)
	}
	if w.onEvent != nil {
		w.onEvent(e)
	}
}

func drain(events <-chan fsnotify.Event) {
	for {
		select {
		case <-events:
		default:
			return
		}
	}
}

func reasonOf(err error) string {
	var m *MaterialError
	if errors.As(err, &m) {
		return m.Reason
	}
	return "unreadable"
}

// problemOf identifies a refusal: a refused read by its message (it names files and reasons, no
// sizes or times), refused content by its reason and bytes (its message may name the time).
func problemOf(err error, files SecretFiles) string {
	var m *MaterialError
	if errors.As(err, &m) && files.Certificate != nil {
		h := sha256.New()
		for _, b := range [][]byte{files.Certificate, files.PrivateKey, files.CABundle} {
			h.Write(b)
			h.Write([]byte{0})
		}
		return m.Reason + string(h.Sum(nil))
	}
	return err.Error()
}
