// Package service is what a service manager sees of ratekv besides its
// port: the readiness and stopping notifications of systemd (sd_notify),
// the pid file, and the log file. Each is a few lines of what Redis does,
// without dependencies.
package service

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// The states Notify sends (sd_notify(3)).
const (
	Ready    = "READY=1\nSTATUS=Ready to accept connections"
	Stopping = "STOPPING=1\nSTATUS=Shutting down"
)

// Notify sends state to the service manager listening on socket, the value
// of $NOTIFY_SOCKET: a file system path, or an abstract socket written with
// a leading '@'. An empty socket sends nothing.
func Notify(socket, state string) error {
	if socket == "" {
		return nil
	}
	if socket[0] != '/' && socket[0] != '@' {
		return fmt.Errorf("NOTIFY_SOCKET %q is neither a path nor an abstract socket", socket)
	}
	// The net package turns a leading '@' into the abstract namespace's
	// leading NUL.
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	return nil
}

// WritePidfile writes the process id to path and returns the function that
// removes the file again, unless another process has written its own id
// there since.
func WritePidfile(path string) (remove func(), err error) {
	pid := strconv.Itoa(os.Getpid())
	if err := os.WriteFile(path, []byte(pid+"\n"), 0o644); err != nil {
		return func() {}, fmt.Errorf("writing the pid file: %w", err)
	}
	return func() {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == pid {
			os.Remove(path)
		}
	}, nil
}

// LogFile appends every write to the file at path, opening it for each
// write as Redis does, so that a log rotated by moving the file goes on in
// a new file at path. It is safe for concurrent use; a write that cannot
// reach the file goes to standard error.
type LogFile struct {
	mu   sync.Mutex
	path string
}

// OpenLog returns the LogFile of path, or the error that opening it for
// appending gives.
func OpenLog(path string) (*LogFile, error) {
	if path == "" {
		return nil, errors.New("no log file name")
	}
	l := &LogFile{path: path}
	f, err := l.open()
	if err != nil {
		return nil, err
	}
	return l, f.Close()
}

func (l *LogFile) open() (*os.File, error) {
	return os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
}

// Reopen opens the file at its path again, creating it, for a log
// rotation that signals the process (logrotate's postrotate kill -HUP):
// every write opens the file anyway, so this makes the new file exist at
// once and reports whether it can be written.
func (l *LogFile) Reopen() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := l.open()
	if err != nil {
		return err
	}
	return f.Close()
}

// Write appends p to the file.
func (l *LogFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := l.open()
	if err != nil {
		return os.Stderr.Write(p)
	}
	n, err := f.Write(p)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}
