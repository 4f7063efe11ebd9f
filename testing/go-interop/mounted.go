package gointerop

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MaxMountedFileBytes bounds each file read from a mounted certificate folder, as our
// MAX_MOUNTED_FILE_BYTES: a Secret holds at most 1 MiB; the rest is room for a ca.crt projected
// from ClusterTrustBundles.
const MaxMountedFileBytes = 2 << 20

const dataLink = "..data"

// doc:begin read-folder

// ReadFolder reads one version of a mounted certificate folder: tls.crt, tls.key and ca.crt of a
// Secret, or credentials.pem and ca.crt of a pod certificate's projected volume. The kubelet
// writes each version into a new `..<timestamp>` folder and renames the `..data` symlink over the
// old one, so the files are read through the resolved `..data`, and again if it moved meanwhile.
// A folder without `..data` (a test, a hostPath) is read as it is.
func ReadFolder(dir string, layout Layout) (SecretFiles, error) {
	for attempt := 0; ; attempt++ {
		version, _ := os.Readlink(filepath.Join(dir, dataLink)) // "" when there is no ..data
		files, err := readFiles(dir, filepath.Join(dir, version), layout)
		if now, _ := os.Readlink(filepath.Join(dir, dataLink)); now == version || attempt >= 3 {
			return files, err
		}
	}
}

// doc:end read-folder

// readFiles reads every file of layout from one version (from) and splits them into parts; a
// credential bundle that does not split is refused here, before CheckMaterial.
func readFiles(dir, from string, layout Layout) (SecretFiles, error) {
	var texts [][]byte
	for _, name := range layout.files() {
		data, err := readMountedFile(filepath.Join(from, name), filepath.Join(dir, name), layout.mountHint())
		if err != nil {
			return SecretFiles{}, err
		}
		texts = append(texts, data)
	}
	return layout.secretFiles(texts)
}

// readMountedFile opens path once, non-blocking (a FIFO in its place must not hang the reader),
// and reads it from that descriptor only if it is a regular file of at most MaxMountedFileBytes.
// Errors name the file as mounted (shown), not the timestamped folder, so one problem reads the
// same on every poll; hint says what to mount when it is missing.
func readMountedFile(path, shown, hint string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, refuse("not_found", "cannot read %s: does not exist, or is a symlink to nothing; %s", shown, hint)
		case errors.Is(err, syscall.ELOOP):
			return nil, refuse("symlink_loop", "cannot read %s: is a symlink loop", shown)
		case errors.Is(err, syscall.ENXIO):
			return nil, refuse("socket", "cannot read %s: is a socket, not a regular file", shown)
		}
		return nil, refuse("unreadable", "cannot read %s: %v", shown, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, refuse("unreadable", "cannot read %s: %v", shown, err)
	}
	switch mode := info.Mode(); {
	case mode&fs.ModeNamedPipe != 0:
		return nil, refuse("fifo", "cannot read %s: is a FIFO (named pipe), not a regular file", shown)
	case mode&fs.ModeSocket != 0:
		return nil, refuse("socket", "cannot read %s: is a socket, not a regular file", shown)
	case mode.IsDir():
		return nil, refuse("directory", "cannot read %s: is a directory, not a regular file", shown)
	case mode&fs.ModeDevice != 0:
		return nil, refuse("device", "cannot read %s: is a device, not a regular file", shown)
	case !mode.IsRegular():
		return nil, refuse("unreadable", "cannot read %s: is not a regular file", shown)
	case info.Size() > MaxMountedFileBytes:
		return nil, refuse("too_large", "cannot read %s: is above the %d-byte bound", shown, MaxMountedFileBytes)
	}
	// Never more than the bound, even if the file grows after the Stat.
	data, err := io.ReadAll(io.LimitReader(f, MaxMountedFileBytes+1))
	if err != nil {
		return nil, refuse("unreadable", "cannot read %s: %v", shown, err)
	}
	if len(data) > MaxMountedFileBytes {
		return nil, refuse("too_large", "cannot read %s: grew above the %d-byte bound while read", shown, MaxMountedFileBytes)
	}
	return data, nil
}
