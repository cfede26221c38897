package shards

// What OBJECT ENCODING and MEMORY USAGE report of a key.

// embstrMax is the longest string Redis keeps as "embstr".
const embstrMax = 44

// Encoding returns the name OBJECT ENCODING gives e's value, Redis's names
// for the representation ratekv uses: "int" for a string kept as an
// integer; "embstr" for a string of at most 44 bytes and "raw" for a
// longer one (Redis's rule, though ratekv keeps strings of up to 8 bytes
// inside the entry and longer ones by reference); "listpack" for a compact
// hash, list or sorted set, "hashtable", "quicklist" and "skiplist" for the
// large ones; and, as Redis does for a module's type, "raw" for a sliding
// log or window. Requires e's shard lock held.
func (s *Store) Encoding(e *Entry) string {
	switch e.Kind() {
	case KindString:
		if e.form() == formInt {
			return "int"
		}
		if s.StrLen(e) <= embstrMax {
			return "embstr"
		}
	case KindHash:
		return s.Hash(e).Encoding()
	case KindList:
		return s.List(e).Encoding()
	case KindZSet:
		if z, ok := s.Object(e).(*ZSet); ok {
			return z.Encoding()
		}
	}
	return "raw"
}

// MemoryUsage returns the bytes e's key holds, as Live counts them and
// Dropped would when it is deleted: the entry, a key kept in the arena,
// and for a value kept by reference its slot and the value's bytes.
// Requires e's shard lock held.
func (s *Store) MemoryUsage(e *Entry) int64 {
	n := entryBytes
	if _, inline := e.inlineKey(); !inline {
		_, kl := e.arenaKey()
		n += int64(kl)
	}
	if e.form() == formRef {
		n += refBytes + valueBytes(*s.ref(e))
	}
	return n
}
