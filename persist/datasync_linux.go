package persist

// Why fsync goes through io_uring on Linux.
//
// A goroutine blocked in fdatasync keeps its P (the Go scheduler's right
// to run Go code) until sysmon notices and hands the P to another thread,
// and sysmon, idle for long under a steady load, looks only every 10 ms.
// With GOMAXPROCS=1 (a server pinned to one core) every fsync would
// therefore stop all connections for as long as the disk takes: with
// everysec the core sits idle through the fsyncs and tail latency grows;
// with always, requests that arrive during an fsync cannot even be read
// until it ends.
//
// Submitted to an io_uring instead, the fsync runs in a kernel worker, and
// the goroutine waits on an eventfd through the netpoller: parked, its P
// free for the connections. Redis gets the same from its bio thread. When
// io_uring is unavailable (old kernel, or a seccomp profile that forbids
// it) the plain system call is used.

import (
	"errors"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// datasync makes f's data (and its size) durable with fdatasync, which
// unlike fsync does not wait for a journal commit of the modification
// time: what Redis uses for the AOF.
func datasync(f *os.File) error { return syncFile(f, true) }

// fullSync is fsync, through io_uring when it is available.
func fullSync(f *os.File) error { return syncFile(f, false) }

func syncFile(f *os.File, dataOnly bool) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return f.Sync()
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if r := sharedRing(); r != nil {
			serr = r.fsync(int(fd), dataOnly)
			return
		}
		serr = plainSync(int(fd), dataOnly)
	}); err != nil {
		return err
	}
	if serr != nil {
		op := "fsync"
		if dataOnly {
			op = "fdatasync"
		}
		return &os.PathError{Op: op, Path: f.Name(), Err: serr}
	}
	return nil
}

func plainSync(fd int, dataOnly bool) error {
	for {
		var err error
		if dataOnly {
			err = syscall.Fdatasync(fd)
		} else {
			err = syscall.Fsync(fd)
		}
		if err != syscall.EINTR {
			return err
		}
	}
}

// removeFile deletes a file that may be large without holding up the
// connections. Unlinking a file frees its blocks in the same system call,
// and on a disk mounted with discard, waits for the device to discard
// them: milliseconds for a rewritten log, during which a thread blocked in
// unlink keeps its P (see the file comment) and the connections wait.
// Through io_uring a kernel worker does the unlink while the goroutine
// waits parked (Redis unlinks in its bio thread). Without io_uring the
// file is truncated a few megabytes at a time, yielding in between, which
// spreads the stall.
func removeFile(path string) error {
	if r := sharedRing(); r != nil {
		if err := r.unlink(path); err != errUnsupported {
			if err != nil {
				return &os.PathError{Op: "unlink", Path: path, Err: err}
			}
			return nil
		}
	}
	return removeGradually(path)
}

// fsyncMethod says how files are made durable, for the start-up log.
func fsyncMethod() string {
	if sharedRing() != nil {
		return "io_uring"
	}
	if !useRing {
		return "system call"
	}
	return "system call (io_uring unavailable: " + ringErr.Error() + ")"
}

// useRing can be turned off by tests to exercise the plain system call.
var useRing = true

var (
	ringOnce sync.Once
	ring     *uring
	ringErr  error // why io_uring is not used, for the log
)

// sharedRing returns the process's io_uring, set up on first use, or nil
// when io_uring cannot be used.
func sharedRing() *uring {
	if !useRing {
		return nil
	}
	ringOnce.Do(func() { ring, ringErr = newUring() })
	return ring
}

// io_uring ABI (include/uapi/linux/io_uring.h). The system call numbers are
// the same on every architecture Go supports on Linux.
const (
	sysIoUringSetup    = 425
	sysIoUringEnter    = 426
	sysIoUringRegister = 427

	ioringOffSqRing       = 0
	ioringOffCqRing       = 0x8000000
	ioringOffSqes         = 0x10000000
	ioringFeatSingleMmap  = 1 << 0
	ioringRegisterEventfd = 4
	ioringOpFsync         = 3
	ioringOpUnlinkat      = 36
	ioringFsyncDatasync   = 1 << 0
	atFdcwd               = -100 // AT_FDCWD: a relative path is resolved from the working directory

	ringEntries       = 16 // the kernel makes the completion queue twice as long
	maxInFlight       = ringEntries
	sizeofSqe         = 64
	sizeofCqe         = 16
	sizeofUringParams = 120
	eventfdFlags      = syscall.O_CLOEXEC | syscall.O_NONBLOCK // EFD_CLOEXEC | EFD_NONBLOCK

	// Offsets in struct io_uring_params and its io_sqring_offsets and
	// io_cqring_offsets.
	paramsSqEntries, paramsCqEntries, paramsFeatures = 0, 4, 20
	paramsSqOff, paramsCqOff                         = 40, 80
	sqOffTail, sqOffMask, sqOffArray                 = 4, 8, 24
	cqOffHead, cqOffTail, cqOffMask, cqOffCqes       = 0, 4, 8, 20
)

// sqe is struct io_uring_sqe, as far as IORING_OP_FSYNC and
// IORING_OP_UNLINKAT use it (opFlags is the union of fsync_flags and
// unlink_flags).
type sqe struct {
	opcode   uint8
	flags    uint8
	ioprio   uint16
	fd       int32
	off      uint64
	addr     uint64
	len      uint32
	opFlags  uint32
	userData uint64
	_        [3]uint64
}

// cqe is struct io_uring_cqe.
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// uring is a minimal io_uring that runs fsyncs for any number of
// goroutines: each submits and waits on its own channel; one reaper
// goroutine, parked on the eventfd, hands out the completions.
type uring struct {
	mu      sync.Mutex // guards the submission queue, waiting, seq and broken
	fd      int
	ev      *os.File // eventfd the kernel signals on completions
	sqTail  *uint32
	sqMask  uint32
	sqArr   unsafe.Pointer
	sqes    unsafe.Pointer
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    unsafe.Pointer
	seq     uint64
	waiting map[uint64]chan int32 // by user_data
	broken  bool                  // the ring failed: plain system calls from now on
}

func newUring() (*uring, error) {
	var p [sizeofUringParams]byte
	fd, _, errno := syscall.Syscall(sysIoUringSetup, ringEntries, uintptr(unsafe.Pointer(&p[0])), 0)
	if errno != 0 {
		return nil, errno
	}
	r := &uring{fd: int(fd), waiting: make(map[uint64]chan int32)}
	ok := false
	defer func() {
		if !ok {
			syscall.Close(r.fd)
		}
	}()
	u32 := func(b []byte, off int) uint32 { return *(*uint32)(unsafe.Pointer(&b[off])) }
	sqEntries, cqEntries := u32(p[:], paramsSqEntries), u32(p[:], paramsCqEntries)
	sqOff, cqOff := p[paramsSqOff:paramsSqOff+40], p[paramsCqOff:paramsCqOff+40]
	sqSize := int(u32(sqOff, sqOffArray) + sqEntries*4)
	cqSize := int(u32(cqOff, cqOffCqes) + cqEntries*sizeofCqe)
	single := u32(p[:], paramsFeatures)&ioringFeatSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	prot, flags := syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE
	sq, err := syscall.Mmap(r.fd, ioringOffSqRing, sqSize, prot, flags)
	if err != nil {
		return nil, err
	}
	cq := sq
	if !single {
		if cq, err = syscall.Mmap(r.fd, ioringOffCqRing, cqSize, prot, flags); err != nil {
			return nil, err
		}
	}
	sqes, err := syscall.Mmap(r.fd, ioringOffSqes, int(sqEntries)*sizeofSqe, prot, flags)
	if err != nil {
		return nil, err
	}
	// The mappings live as long as the process: the ring is never torn down.
	r.sqTail = (*uint32)(unsafe.Pointer(&sq[u32(sqOff, sqOffTail)]))
	r.sqMask = u32(sq, int(u32(sqOff, sqOffMask)))
	r.sqArr = unsafe.Pointer(&sq[u32(sqOff, sqOffArray)])
	r.sqes = unsafe.Pointer(&sqes[0])
	r.cqHead = (*uint32)(unsafe.Pointer(&cq[u32(cqOff, cqOffHead)]))
	r.cqTail = (*uint32)(unsafe.Pointer(&cq[u32(cqOff, cqOffTail)]))
	r.cqMask = u32(cq, int(u32(cqOff, cqOffMask)))
	r.cqes = unsafe.Pointer(&cq[u32(cqOff, cqOffCqes)])

	efd, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, eventfdFlags, 0)
	if errno != 0 {
		return nil, errno
	}
	efd32 := int32(efd)
	if _, _, errno := syscall.Syscall6(sysIoUringRegister, uintptr(r.fd), ioringRegisterEventfd,
		uintptr(unsafe.Pointer(&efd32)), 1, 0, 0); errno != 0 {
		syscall.Close(int(efd))
		return nil, errno
	}
	// Non-blocking, so os.NewFile puts it in the netpoller: a Read parks
	// the goroutine instead of blocking its thread.
	r.ev = os.NewFile(efd, "io_uring-eventfd")
	ok = true
	go r.reap()
	return r, nil
}

// failed is what a waiter receives when the ring broke under it.
const failed = math.MinInt32

// fsync submits an fsync (fdatasync when dataOnly) of fd and waits for its
// completion without holding a thread. Several may be in flight (the log's
// and a snapshot's); beyond maxInFlight, or once the ring has failed, the
// plain system call does the job.
func (r *uring) fsync(fd int, dataOnly bool) error {
	e := sqe{opcode: ioringOpFsync, fd: int32(fd)}
	if dataOnly {
		e.opFlags = ioringFsyncDatasync
	}
	for {
		ch := r.submit(e)
		if ch == nil {
			return plainSync(fd, dataOnly)
		}
		if again, err := fsyncResult(<-ch); !again {
			return err
		}
	}
}

// errRingBroke is an fsync's result when the ring broke while it was in
// flight.
var errRingBroke = errors.New("io_uring failed with an fsync in flight; its outcome is unknown")

// fsyncResult turns an fsync's completion into its error, or into again
// when it is to be submitted again.
//
// When the ring broke under it, the fsync may still have run and failed
// unseen, and Linux reports a writeback error once per open file: an
// fsync of the same file after it would succeed although the data never
// reached the disk. So the outcome counts as a failure, as one reported by
// the disk would: the log writes what it wrote since its last good fsync
// again and retries (with the plain system call, the ring being gone).
func fsyncResult(res int32) (again bool, err error) {
	switch {
	case res == failed:
		return false, errRingBroke
	case res == -int32(syscall.EINTR) || res == -int32(syscall.EAGAIN):
		return true, nil
	case res < 0:
		return false, syscall.Errno(-res)
	}
	return false, nil
}

// unlink removes path (unlinkat(AT_FDCWD, path, 0)) in a kernel worker
// and waits without holding a thread. It returns errUnsupported when the
// ring cannot do it (kernels before 5.11 answer EINVAL), so that the caller
// falls back to the system call.
func (r *uring) unlink(path string) error {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	for {
		ch := r.submit(sqe{opcode: ioringOpUnlinkat, fd: atFdcwd, addr: uint64(uintptr(unsafe.Pointer(p)))})
		if ch == nil {
			return errUnsupported
		}
		res := <-ch
		runtime.KeepAlive(p) // the kernel reads the path until it completes
		switch {
		case res == failed || res == -int32(syscall.EINVAL) || res == -int32(syscall.EOPNOTSUPP):
			return errUnsupported
		case res == -int32(syscall.EINTR) || res == -int32(syscall.EAGAIN):
			continue
		case res < 0:
			return syscall.Errno(-res)
		default:
			return nil
		}
	}
}

// errUnsupported says the ring could not run an operation.
var errUnsupported = errors.New("persist: not supported by io_uring here")

// submit queues one operation (e's user_data is set here) and returns the
// channel its result will arrive on, or nil when the ring cannot take it.
func (r *uring) submit(op sqe) chan int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken || len(r.waiting) >= maxInFlight {
		return nil
	}
	r.seq++
	tail := atomic.LoadUint32(r.sqTail)
	idx := tail & r.sqMask
	e := (*sqe)(unsafe.Add(r.sqes, uintptr(idx)*sizeofSqe))
	op.userData = r.seq
	*e = op
	*(*uint32)(unsafe.Add(r.sqArr, uintptr(idx)*4)) = idx
	atomic.StoreUint32(r.sqTail, tail+1)
	for {
		n, _, errno := syscall.Syscall6(sysIoUringEnter, uintptr(r.fd), 1, 0, 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 || n != 1 {
			// Not submitted, or in an unknown state: stop using the ring.
			r.failLocked()
			return nil
		}
		break
	}
	ch := make(chan int32, 1)
	r.waiting[r.seq] = ch
	return ch
}

// reap hands each completion to its waiter. It parks on the eventfd, which
// the kernel signals after posting completions.
func (r *uring) reap() {
	var buf [8]byte
	for {
		if _, err := r.ev.Read(buf[:]); err != nil {
			r.mu.Lock()
			r.failLocked()
			r.mu.Unlock()
			return
		}
		r.mu.Lock()
		for head := atomic.LoadUint32(r.cqHead); head != atomic.LoadUint32(r.cqTail); head++ {
			c := *(*cqe)(unsafe.Add(r.cqes, uintptr(head&r.cqMask)*sizeofCqe))
			atomic.StoreUint32(r.cqHead, head+1)
			if ch, ok := r.waiting[c.userData]; ok {
				delete(r.waiting, c.userData)
				ch <- c.res
			}
		}
		r.mu.Unlock()
	}
}

// failLocked gives the ring up: from now on the plain system calls do the
// work; the operations in flight get failed (see fsyncResult and unlink).
// Requires r.mu held.
func (r *uring) failLocked() {
	r.broken = true
	for id, ch := range r.waiting {
		delete(r.waiting, id)
		ch <- failed
	}
}

// Allocate allocates n bytes of f from off (fallocate, extending the
// file; see AOF.reserve). A file system without fallocate answers
// errors.ErrUnsupported.
func (f osFile) Allocate(off, n int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, off, n)
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EOPNOTSUPP, syscall.ENOSYS:
			return errors.ErrUnsupported
		case nil:
			return nil
		}
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
}
