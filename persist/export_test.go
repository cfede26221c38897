package persist

import "sync/atomic"

// Faults makes the log's files fail on demand, for tests outside the
// package (the MISCONF integration test).
type Faults struct {
	write atomic.Pointer[error]
	sync  atomic.Pointer[error]
}

// InjectFaults wraps the files of Managers opened from now on; the
// returned function undoes it.
func InjectFaults() (*Faults, func()) {
	fl := &Faults{}
	wrapFile = func(f aofFile) aofFile { return &faultyFile{f, fl} }
	return fl, func() { wrapFile = nil }
}

// FailWrites makes writes fail with err (nil: succeed again).
func (fl *Faults) FailWrites(err error) { fl.write.Store(&err) }

// FailSyncs makes fsyncs fail with err (nil: succeed again).
func (fl *Faults) FailSyncs(err error) { fl.sync.Store(&err) }

type faultyFile struct {
	aofFile
	fl *Faults
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if e := f.fl.write.Load(); e != nil && *e != nil {
		return 0, *e
	}
	return f.aofFile.WriteAt(p, off)
}

func (f *faultyFile) Sync() error {
	if e := f.fl.sync.Load(); e != nil && *e != nil {
		return *e
	}
	return f.aofFile.Sync()
}
