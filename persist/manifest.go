package persist

// The manifest names the files that make up the append-only log, in Redis
// 7's multi-part AOF syntax, one file per line:
//
//	file appendonly.aof.3.base.rkv seq 3 type b
//	file appendonly.aof.3.incr.aof seq 3 type i
//	file appendonly.aof.4.incr.aof seq 4 type i
//
// At most one base (type b, a snapshot file) and any number of incremental
// logs (type i, RESP records) in replay order. It is replaced atomically
// (write, fsync, rename, fsync the directory), so it always names a
// complete, durable set of files. A name with a space, a double quote or a
// character that is not printable (appendfilename allows them, as Redis's
// does) is written double-quoted with Go's escapes, as Redis quotes it,
// so that every line still splits into its words.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
)

type manifestFile struct {
	name string
	seq  int64
}

type manifest struct {
	base  *manifestFile
	incrs []manifestFile
}

// maxSeq returns the highest sequence number the manifest uses.
func (m *manifest) maxSeq() int64 {
	n := int64(0)
	if m.base != nil {
		n = m.base.seq
	}
	for _, f := range m.incrs {
		n = max(n, f.seq)
	}
	return n
}

// files returns every file name in the manifest.
func (m *manifest) files() []string {
	var out []string
	if m.base != nil {
		out = append(out, m.base.name)
	}
	for _, f := range m.incrs {
		out = append(out, f.name)
	}
	return out
}

func (m *manifest) encode() []byte {
	var b bytes.Buffer
	if m.base != nil {
		fmt.Fprintf(&b, "file %s seq %d type b\n", quoteName(m.base.name), m.base.seq)
	}
	for _, f := range m.incrs {
		fmt.Fprintf(&b, "file %s seq %d type i\n", quoteName(f.name), f.seq)
	}
	return b.Bytes()
}

// quoteName returns a file name as the manifest writes it (see the file
// comment).
func quoteName(name string) string {
	for _, r := range name {
		if r == '"' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return strconv.Quote(name)
		}
	}
	return name
}

// splitLine splits a manifest line into its words: runs of characters
// between spaces, or double-quoted strings (quoteName). A word that starts
// with a double quote but is not a valid quoted string is taken as it is.
func splitLine(line string) []string {
	var words []string
	for {
		line = strings.TrimLeftFunc(line, unicode.IsSpace)
		if line == "" {
			return words
		}
		if line[0] == '"' {
			if q, err := strconv.QuotedPrefix(line); err == nil {
				w, _ := strconv.Unquote(q)
				words = append(words, w)
				line = line[len(q):]
				continue
			}
		}
		end := strings.IndexFunc(line, unicode.IsSpace)
		if end < 0 {
			end = len(line)
		}
		words = append(words, line[:end])
		line = line[end:]
	}
}

// parseManifest parses a manifest. Names must be plain file names.
func parseManifest(data []byte) (manifest, error) {
	var m manifest
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		f := splitLine(line)
		if len(f)%2 != 0 {
			return m, fmt.Errorf("line %d: odd number of words", i+1)
		}
		var mf manifestFile
		typ := ""
		for j := 0; j < len(f); j += 2 {
			switch f[j] {
			case "file":
				mf.name = f[j+1]
			case "seq":
				n, err := strconv.ParseInt(f[j+1], 10, 64)
				if err != nil || n < 1 {
					return m, fmt.Errorf("line %d: bad seq %q", i+1, f[j+1])
				}
				mf.seq = n
			case "type":
				typ = f[j+1]
			}
		}
		if mf.name == "" || mf.name != filepath.Base(mf.name) || mf.name == "." || mf.name == ".." || strings.ContainsAny(mf.name, `/\`) {
			return m, fmt.Errorf("line %d: bad file name %q", i+1, mf.name)
		}
		if mf.seq == 0 {
			return m, fmt.Errorf("line %d: missing seq", i+1)
		}
		switch typ {
		case "b":
			if m.base != nil {
				return m, fmt.Errorf("line %d: a second base file", i+1)
			}
			m.base = &mf
		case "i":
			// They are replayed in the order listed: out of order (a
			// hand edit) the state would silently be an older one, and
			// a file listed twice would be replayed twice. Redis refuses
			// such a manifest too.
			if n := len(m.incrs); n > 0 && mf.seq <= m.incrs[n-1].seq {
				return m, fmt.Errorf("line %d: incremental file %s has seq %d, not above the %d of %s before it (they must be listed in the order they were written, with rising seq)",
					i+1, mf.name, mf.seq, m.incrs[n-1].seq, m.incrs[n-1].name)
			}
			for _, f := range m.files() {
				if f == mf.name {
					return m, fmt.Errorf("line %d: %s is listed twice", i+1, mf.name)
				}
			}
			m.incrs = append(m.incrs, mf)
		default:
			return m, fmt.Errorf("line %d: unknown file type %q", i+1, typ)
		}
	}
	return m, nil
}

// readManifest reads the manifest at path; ok is false if there is none.
func readManifest(path string) (m manifest, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	m, err = parseManifest(data)
	if err != nil {
		return m, false, fmt.Errorf("%s: %w", path, err)
	}
	return m, true, nil
}

// manifestDirSync makes a manifest's rename durable; a test replaces it
// to make that fail.
var manifestDirSync = syncDir

// renamedError is writeManifest's error when only the directory's fsync
// failed: the new manifest is in place, but a crash may still bring the
// old one back, so a caller must keep every file that either names.
type renamedError struct{ err error }

func (e *renamedError) Error() string { return e.err.Error() }
func (e *renamedError) Unwrap() error { return e.err }

// manifestRenamed reports whether err is a renamedError.
func manifestRenamed(err error) bool {
	var r *renamedError
	return errors.As(err, &r)
}

// writeManifest replaces the manifest at path durably. See renamedError
// for the one failure after which the new manifest is in place.
func writeManifest(path string, m *manifest) error {
	renamed, err := replaceFile(path, m.encode(), manifestDirSync)
	if err != nil {
		err = fmt.Errorf("writing manifest %s: %w", path, err)
		if renamed {
			return &renamedError{err}
		}
	}
	return err
}

// replaceFile replaces path with data durably: path.tmp written, fsynced,
// renamed over path, and the directory fsynced with dirSync. renamed
// says the new file is in place (only the directory's fsync failed).
func replaceFile(path string, data []byte, dirSync func(string) error) (renamed bool, err error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return false, err
	}
	_, err = f.Write(data)
	if err == nil {
		err = fullSync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return false, err
	}
	return true, dirSync(filepath.Dir(path))
}
