package persist

// Snapshot files: the dump file (SAVE, BGSAVE, save rules) and the base
// of the append-only log (BGREWRITEAOF) share one format.
//
//	header  "RATEKV" | format version, uint16 LE | reserved uint16 (0)
//	blocks  type byte | uvarint length | data | CRC-32C of data, uint32 LE
//	          'K' keys: snapshot records (shards.AppendRecord), one shard's
//	              worth per block
//	          'L' log records (RESP arrays) to replay after the keys: the
//	              writes that happened while the shards were being captured
//	              (see capture.go)
//	end     'E' | uvarint keys | uvarint log records |
//	        CRC-32C of every byte of the file before it, uint32 LE
//
// All 'K' blocks come before all 'L' blocks. A block is only applied after
// its checksum matched, and the file only counts as loaded when the end
// block's counts and whole-file checksum match and nothing follows it.
// Lengths are checked against the bytes left in the file before anything
// is allocated.
//
// Writing follows hashicorp/raft's file snapshots and bbolt's ordering:
// write name.tmp through a buffer with a running checksum, flush, fsync,
// close, rename over name, fsync the directory. A crash at any point
// leaves either the old file or the new one, never a mix.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/ratekv/ratekv/journal"
	"github.com/ratekv/ratekv/shards"
)

const (
	snapshotMagic   = "RATEKV"
	snapshotVersion = 1
	headerLen       = len(snapshotMagic) + 4

	blockKeys    = 'K'
	blockRecords = 'L'
	blockEnd     = 'E'
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// snapshotWriter writes one snapshot file.
type snapshotWriter struct {
	path, tmp string
	f         *os.File
	bw        *bufio.Writer
	crc       hash.Hash32
	w         io.Writer // bw and crc
	size      int64
	keys      uint64
	recs      uint64
	scratch   []byte
}

// createSnapshot starts writing path (through path.tmp).
func createSnapshot(path string) (*snapshotWriter, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	w := &snapshotWriter{path: path, tmp: tmp, f: f, bw: bufio.NewWriterSize(f, 1<<20), crc: crc32.New(castagnoli)}
	w.w = io.MultiWriter(w.bw, w.crc)
	var h [headerLen]byte
	copy(h[:], snapshotMagic)
	binary.LittleEndian.PutUint16(h[len(snapshotMagic):], snapshotVersion)
	if err := w.write(h[:]); err != nil {
		w.abort()
		return nil, err
	}
	return w, nil
}

func (w *snapshotWriter) write(p []byte) error {
	n, err := w.w.Write(p)
	w.size += int64(n)
	return err
}

// block writes one block of type typ holding data; n is how many keys
// ('K') or log records ('L') it holds.
func (w *snapshotWriter) block(typ byte, data []byte, n int) error {
	h := append(w.scratch[:0], typ)
	h = binary.AppendUvarint(h, uint64(len(data)))
	w.scratch = h
	if err := w.write(h); err != nil {
		return err
	}
	if err := w.write(data); err != nil {
		return err
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], crc32.Checksum(data, castagnoli))
	if typ == blockKeys {
		w.keys += uint64(n)
	} else {
		w.recs += uint64(n)
	}
	return w.write(sum[:])
}

// commit writes the end block and makes the file durable under its name.
// On error the temporary file is removed.
func (w *snapshotWriter) commit() (size int64, err error) {
	defer func() {
		if err != nil {
			w.abort()
		}
	}()
	e := []byte{blockEnd}
	e = binary.AppendUvarint(e, w.keys)
	e = binary.AppendUvarint(e, w.recs)
	if err := w.write(e); err != nil {
		return 0, err
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], w.crc.Sum32())
	if _, err := w.bw.Write(sum[:]); err != nil {
		return 0, err
	}
	w.size += 4
	if err := w.bw.Flush(); err != nil {
		return 0, err
	}
	if err := fullSync(w.f); err != nil {
		return 0, fmt.Errorf("fsync %s: %w", w.tmp, err)
	}
	err = w.f.Close()
	w.f = nil
	if err != nil {
		return 0, err
	}
	if err := os.Rename(w.tmp, w.path); err != nil {
		return 0, err
	}
	if err := syncDir(filepath.Dir(w.path)); err != nil {
		return 0, err
	}
	return w.size, nil
}

// abort closes and removes the temporary file.
func (w *snapshotWriter) abort() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	os.Remove(w.tmp)
}

// syncDir fsyncs a directory, making renames and creations in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = fullSync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// snapshotHandler receives what loadSnapshot decodes. key is called for
// every key in file order (key aliases the block; v is the handler's);
// records for every 'L' block, after all keys.
type snapshotHandler struct {
	key     func(key []byte, expireAt int64, v *shards.Value) error
	records func(data []byte, n int) error
}

// snapshotInfo is what a loaded snapshot held.
type snapshotInfo struct {
	keys, records uint64
}

// loadSnapshot reads a snapshot from r (size bytes, named name in errors)
// and hands its contents to h. A damaged file is a *CorruptError; an error
// returned by h is returned as is.
func loadSnapshot(r io.Reader, name string, size int64, h snapshotHandler) (snapshotInfo, error) {
	crc := crc32.New(castagnoli)
	cr := &countingReader{r: bufio.NewReaderSize(r, 1<<20), crc: crc}
	corrupt := func(at int64, format string, a ...any) error {
		return &CorruptError{File: name, Offset: at, Size: size, Reason: fmt.Sprintf(format, a...)}
	}
	short := func(at int64, err error) error {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return corrupt(at, "file ends early (incomplete snapshot)")
		}
		return fmt.Errorf("reading %s: %w", name, err)
	}
	var info snapshotInfo
	var hdr [headerLen]byte
	if _, err := io.ReadFull(cr, hdr[:]); err != nil {
		return info, short(0, err)
	}
	if string(hdr[:len(snapshotMagic)]) != snapshotMagic {
		return info, corrupt(0, "not a ratekv snapshot (bad magic)")
	}
	if v := binary.LittleEndian.Uint16(hdr[len(snapshotMagic):]); v != snapshotVersion {
		return info, corrupt(int64(len(snapshotMagic)), "snapshot format version %d, this ratekv reads version %d", v, snapshotVersion)
	}
	var data []byte
	sawRecords := false
	for {
		at := cr.n
		typ, err := cr.ReadByte()
		if err != nil {
			return info, short(at, err)
		}
		if typ == blockEnd {
			keys, err1 := binary.ReadUvarint(cr)
			recs, err2 := binary.ReadUvarint(cr)
			if err := errors.Join(err1, err2); err != nil {
				return info, short(at, err)
			}
			want := crc.Sum32()
			var sum [4]byte
			if _, err := io.ReadFull(cr, sum[:]); err != nil {
				return info, short(at, err)
			}
			if binary.LittleEndian.Uint32(sum[:]) != want {
				return info, corrupt(at, "whole-file checksum mismatch")
			}
			if keys != info.keys || recs != info.records {
				return info, corrupt(at, "end block counts %d keys and %d records, the file holds %d and %d", keys, recs, info.keys, info.records)
			}
			if _, err := cr.ReadByte(); err != io.EOF {
				return info, corrupt(cr.n-1, "data after the end block")
			}
			return info, nil
		}
		if typ != blockKeys && typ != blockRecords {
			return info, corrupt(at, "unknown block type %q", typ)
		}
		if typ == blockKeys && sawRecords {
			return info, corrupt(at, "keys after log records")
		}
		l, err := binary.ReadUvarint(cr)
		if err != nil {
			return info, short(at, err)
		}
		if l > uint64(size-cr.n) {
			return info, corrupt(at, "block of %d bytes, %d left in the file", l, size-cr.n)
		}
		if uint64(cap(data)) < l {
			data = make([]byte, l)
		}
		data = data[:l]
		if _, err := io.ReadFull(cr, data); err != nil {
			return info, short(at, err)
		}
		var sum [4]byte
		if _, err := io.ReadFull(cr, sum[:]); err != nil {
			return info, short(at, err)
		}
		if binary.LittleEndian.Uint32(sum[:]) != crc32.Checksum(data, castagnoli) {
			return info, corrupt(at, "block checksum mismatch")
		}
		if typ == blockRecords {
			sawRecords = true
			n, err := countRecords(data)
			if err != nil {
				return info, corrupt(at, "log record block: %v", err)
			}
			if h.records != nil {
				if err := h.records(data, n); err != nil {
					return info, err
				}
			}
			info.records += uint64(n)
			continue
		}
		for off := 0; off < len(data); {
			key, exp, v, n, err := shards.DecodeRecord(data[off:])
			if err != nil {
				return info, corrupt(at, "key record at block offset %d: %v", off, err)
			}
			off += n
			info.keys++
			if h.key != nil {
				if err := h.key(key, exp, &v); err != nil {
					return info, err
				}
			}
		}
	}
}

// countRecords checks that data is a sequence of whole log records and
// counts them.
func countRecords(data []byte) (int, error) {
	var args [][]byte
	n := 0
	for off := 0; off < len(data); n++ {
		var used int
		var err error
		args, used, err = journal.ParseRecord(data[off:], args)
		if err != nil {
			return 0, err
		}
		if used == 0 {
			return 0, errors.New("incomplete record")
		}
		off += used
	}
	return n, nil
}

// countingReader reads through a checksum and counts bytes.
type countingReader struct {
	r   *bufio.Reader
	crc hash.Hash32
	n   int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc.Write(p[:n])
	c.n += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.crc.Write([]byte{b})
		c.n++
	}
	return b, err
}

// recordsOf returns a record source over a block of log records, for
// Options.Replay.
func recordsOf(data []byte) func() ([][]byte, error) {
	rr := journal.NewReader(bytes.NewReader(data), "snapshot log block", int64(len(data)))
	return rr.Next
}
