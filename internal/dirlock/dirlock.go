// Package dirlock keeps two servers off one data directory: an exclusive
// flock on a file in the directory, held for the life of the process, so a
// second server started on the same directory refuses to start instead of
// truncating or interleaving the first one's files.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FileName is the lock file's name inside the data directory.
const FileName = "ratekv.lock"

// Lock is a held lock on a data directory. Its zero value holds nothing.
type Lock struct {
	f         *os.File
	path      string
	created   bool // Acquire created the file
	announced bool
}

// HeldError reports a directory another process holds, with what that
// process announced about itself (Pid 0 when unknown).
type HeldError struct {
	Dir  string
	Pid  int
	Addr string
}

func (e *HeldError) Error() string {
	who := "another process"
	if e.Pid > 0 {
		who = fmt.Sprintf("another ratekv (pid %d", e.Pid)
		if e.Addr != "" {
			who += ", " + e.Addr
		}
		who += ")"
	}
	return fmt.Sprintf("data directory %s is in use by %s", e.Dir, who)
}

// Acquire locks dir without waiting. When another process holds it, the
// error is a *HeldError and nothing in dir has changed.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, FileName)
	created := false
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		created = err == nil
		if errors.Is(err, os.ErrExist) { // another start created it meanwhile
			f, err = os.OpenFile(path, os.O_RDWR, 0)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := lock(f); err != nil {
		held := &HeldError{Dir: dir}
		if errors.Is(err, errHeld) {
			held.Pid, held.Addr = parse(f)
			f.Close()
			return nil, held
		}
		f.Close()
		if created {
			os.Remove(path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return &Lock{f: f, path: path, created: created}, nil
}

// Announce writes this process's pid and address into the lock file, for
// the message a second server prints.
func (l *Lock) Announce(addr string) error {
	l.announced = true
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err := l.f.WriteAt([]byte(fmt.Sprintf("pid %d\naddr %s\n", os.Getpid(), addr)), 0)
	return err
}

// Release gives the lock up. A lock that was never announced (a start that
// failed) also removes the file it created, so the directory is left as it
// was found.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	if l.created && !l.announced {
		os.Remove(l.path)
	}
	l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
}

// Announced returns what the last server on dir announced, without
// locking: where it listened (or listens still). The address is "" when
// none was announced.
func Announced(dir string) (pid int, addr string, err error) {
	f, err := os.Open(filepath.Join(dir, FileName))
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	pid, addr = parse(f)
	return pid, addr, nil
}

// parse reads what the holder announced.
func parse(f *os.File) (pid int, addr string) {
	b := make([]byte, 256)
	n, _ := f.ReadAt(b, 0)
	for _, line := range strings.Split(string(b[:n]), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "pid":
			pid, _ = strconv.Atoi(v)
		case "addr":
			addr = v
		}
	}
	return pid, addr
}
