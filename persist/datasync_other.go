//go:build !linux

package persist

import "os"

// datasync is fsync where fdatasync is not available.
func datasync(f *os.File) error { return f.Sync() }

// fullSync is fsync.
func fullSync(f *os.File) error { return f.Sync() }

// fsyncMethod says how files are made durable, for the start-up log.
func fsyncMethod() string { return "system call" }

// removeFile deletes a file that may be large; see removeGradually.
func removeFile(path string) error { return removeGradually(path) }
