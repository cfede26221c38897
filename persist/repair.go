package persist

// Repairing a damaged append-only file at start-up. A torn tail of the
// last file that holds records is cut off when aof-load-truncated is yes
// (the incomplete record is dropped). Damage anywhere else is cut off only
// when aof-load-corrupt is truncate, which keeps what it cuts off, and the
// files after it, beside them. The steps of that repair are ordered so
// that a crash between any two leaves a directory the next start loads as
// if the repair had finished (see repair).

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// repairStep, when set (tests), is called after each step of a repair
// and stops it with the error it returns, as a crash there would.
var repairStep func(step string) error

// repair cuts incremental file i at off, keeping the cut part in aside,
// and sets the files after it aside (aof-load-corrupt truncate). The steps
// go in an order that a crash between any two leaves a directory that the
// next start, with the same flag, loads as if the repair had finished,
// with every byte it set aside kept:
//
//  1. the corrupt part is copied to aside (the file is still whole);
//  2. each later file is copied to its aside name;
//  3. the manifest stops naming the later files: from here on no start
//     replays them, even if what follows does not happen (a start deletes
//     log files that no manifest names; their copies remain);
//  4. file i is cut at off;
//  5. the later files' own names are removed.
//
// In another order (cut, rename the later files, then the manifest), a
// crash after the cut would replay the later files on top of the cut one
// at the next start, a state that never was, and a crash after a rename
// would make the next start refuse, naming the file it had moved.
func (m *Manager) repair(i int, path string, off int64, aside string) error {
	step := func(name string) error {
		if repairStep != nil {
			return repairStep(name)
		}
		return nil
	}
	if err := copyTail(path, off, aside); err != nil {
		return err
	}
	if err := step("copied"); err != nil {
		return err
	}
	later := slices.Clone(m.man.incrs[i+1:])
	if len(later) > 0 {
		for _, f := range later {
			p := filepath.Join(m.aofDir, f.name)
			to := asideName(p + ".corrupt-later")
			// A copy, not a second link: removing a log file may cut it
			// down first (removeGradually), which a link would share.
			if err := copyTail(p, 0, to); err != nil {
				return err
			}
			m.logger.Warn("set aside an append-only file that followed the corruption", "file", p, "copied_to", to)
		}
		if err := step("copied later"); err != nil {
			return err
		}
		cut := m.man
		cut.incrs = slices.Clone(m.man.incrs[:i+1])
		if err := writeManifest(m.manifestPath(), &cut); err != nil {
			if manifestRenamed(err) {
				m.man = cut
			}
			return err
		}
		m.man = cut
		if err := step("manifest"); err != nil {
			return err
		}
	}
	if err := truncateFile(path, off); err != nil {
		return err
	}
	if err := step("truncated"); err != nil {
		return err
	}
	for _, f := range later {
		if err := removeFile(filepath.Join(m.aofDir, f.name)); err != nil {
			return err
		}
	}
	return nil
}

// asideName returns name, or else name-2, name-3, …: the first that no
// file has. What a repair sets aside is never overwritten by a later one:
// once files are set aside their numbers are used again (the next rewrite
// numbers on from the manifest), so the same name can be set aside twice,
// and two repairs can run within a second.
func asideName(name string) string {
	try := name
	for i := 2; ; i++ {
		if _, err := os.Lstat(try); err != nil {
			return try // free (or unreadable: the rename or create says why)
		}
		try = fmt.Sprintf("%s-%d", name, i)
	}
}

// truncateFile cuts path at off and fsyncs it.
func truncateFile(path string, off int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(off); err != nil {
		return err
	}
	if err := fullSync(f); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// copyTail copies what follows off in the file at path to a new file,
// aside, and makes it durable.
func copyTail(path string, off int64, aside string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	a, err := os.OpenFile(aside, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(a, io.NewSectionReader(f, off, 1<<62))
	if err == nil {
		err = fullSync(a)
	}
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(aside))
	}
	if err != nil {
		return fmt.Errorf("setting aside %s from offset %d as %s: %w", path, off, aside, err)
	}
	return nil
}
