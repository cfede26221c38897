package shards

// Hashes, in two encodings as in Redis.
//
// A small hash (at most hash-max-listpack-entries fields, every field and
// value at most hash-max-listpack-value bytes) is one byte slice, the
// counterpart of Redis's listpack: the field count (4 bytes, little-endian),
// then each field's element followed by its value's (elem.go), in the order
// the fields were added. Lookups walk it; a new field is appended and a
// deleted one cut out, so HGETALL replies in the order Redis's listpack
// does. The slice is the key's reference itself (refVal.str, with no
// object): a small hash costs its bytes and no header, which keeps a token
// bucket (two fields and an expiry) below Redis's footprint.
//
// A hash that outgrows the limits converts, once and for good as in Redis,
// to a table (oaTable) of slots, each one string holding the field's bytes
// and its value's element: one allocation a field.
//
// A Hash is a handle on a key's hash, valid while the key's shard is locked
// and the key holds the hash.

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strings"
	"unsafe"
)

// hashLimits are hash-max-listpack-entries and hash-max-listpack-value.
var hashLimits compactLimits

func init() { SetHashLimits(512, 64) }

// SetHashLimits sets the largest number of fields and the longest field or
// value (in bytes) a hash may have and still use the compact encoding. It
// is safe for concurrent use. Hashes already converted stay converted.
func SetHashLimits(maxEntries, maxValue int64) { hashLimits.set(min(maxEntries, 1<<31), maxValue) }

// hlpHeader is the size of the compact encoding's field count.
const hlpHeader = 4

// Hash is a handle on a hash: the reference slot that holds it (see
// slotRef). Not safe for concurrent use.
type Hash struct{ slotRef }

// Hash returns the hash of e, which must be of KindHash. Requires e's
// shard held.
func (s *Store) Hash(e *Entry) Hash { return Hash{s.slotOf(e)} }

// NewHash makes e, the entry of key, an empty hash and returns it. The
// caller adds a field before it unlocks: no key holds an empty hash.
// Requires key's shard held.
func (s *Store) NewHash(key []byte, e *Entry) Hash { return Hash{s.newSlot(key, e, KindHash)} }

// newHashValue returns a hash that belongs to no key, for the decoder.
func newHashValue() Hash { return Hash{looseSlot()} }

// hbig is the large encoding.
type hbig = oaTable[hslot]

// hslot is one field of a large hash: the field's length (a uvarint) and
// bytes, then the value's element.
type hslot string

func (s hslot) oaKey() string {
	n, off := uvarint(bytesOf(string(s)), 0)
	return string(s)[off : off+int(n)]
}

// split returns the field and the value of the slot.
func (s hslot) split() (field, value Elem) {
	b := bytesOf(string(s))
	n, off := uvarint(b, 0)
	end := off + int(n)
	value, _ = decodeElem(b, end)
	return Elem{B: b[off:end:end]}, value
}

// makeHslot builds the slot of field and value.
func makeHslot(field []byte, value Elem) hslot {
	fl := uvarintLen(uint64(len(field)))
	b := make([]byte, fl+len(field)+elemSizeOf(value))
	binary.PutUvarint(b, uint64(len(field)))
	copy(b[fl:], field)
	putElemOf(b[fl+len(field):], value)
	return hslot(unsafe.String(&b[0], len(b)))
}

// Encoding returns the OBJECT ENCODING name: "listpack" or "hashtable".
func (h Hash) Encoding() string {
	if _, ok := h.r().obj.(*hbig); ok {
		return "hashtable"
	}
	return "listpack"
}

// Len returns the number of fields.
func (h Hash) Len() int {
	r := h.r()
	if b, ok := r.obj.(*hbig); ok {
		return b.n
	}
	return hlpCount(r.str)
}

func hlpCount(lp []byte) int {
	if len(lp) < hlpHeader {
		return 0
	}
	return int(binary.LittleEndian.Uint32(lp))
}

// hlpFind finds a field in a compact hash: the offsets of its element, of
// its value's and of the end of its value.
func hlpFind(lp []byte, p *probe) (foff, voff, end int, ok bool) {
	for off := hlpHeader; off < len(lp); {
		f, v := decodeElem(lp, off)
		next := skipElem(lp, v)
		if p.matches(f) {
			return off, v, next, true
		}
		off = next
	}
	return 0, 0, 0, false
}

// Get returns the value of field.
func (h Hash) Get(field []byte) (Elem, bool) {
	r := h.r()
	if b, ok := r.obj.(*hbig); ok {
		s, i := b.find(field)
		if i < 0 {
			return Elem{}, false
		}
		_, v := s.split()
		return v, true
	}
	p := newProbe(field)
	_, voff, _, ok := hlpFind(r.str, &p)
	if !ok {
		return Elem{}, false
	}
	v, _ := decodeElem(r.str, voff)
	return v, true
}

// Set sets field to value and reports whether the field is new.
func (h Hash) Set(field, value []byte) (added bool) {
	r := h.r()
	defer h.account(cap(r.str))
	if b, ok := r.obj.(*hbig); ok {
		return hbigSet(b, field, value)
	}
	if lim := hashLimits.value.Load(); int64(len(field)) > lim || int64(len(value)) > lim {
		return hbigSet(h.convert(0), field, value)
	}
	fp, vp := newProbe(field), newProbe(value)
	if _, voff, end, ok := hlpFind(r.str, &fp); ok {
		if n := vp.size(); n != end-voff {
			r.str = resized(r.str, voff, end, n)
		}
		vp.put(r.str[voff:])
		return false
	}
	count := hlpCount(r.str)
	if int64(count)+1 > hashLimits.entries.Load() {
		return hbigSet(h.convert(count+1), field, value)
	}
	start := max(len(r.str), hlpHeader)
	fs := fp.size()
	r.str = resized(r.str, len(r.str), len(r.str), start-len(r.str)+fs+vp.size())
	fp.put(r.str[start:])
	vp.put(r.str[start+fs:])
	binary.LittleEndian.PutUint32(r.str, uint32(count+1))
	return true
}

// hbigSet sets a field of a large hash. A value whose element is as long
// as the old one's is written over it (the slot's bytes are the hash's own).
func hbigSet(b *hbig, field, value []byte) bool {
	vp := newProbe(value)
	if s, i := b.find(field); i >= 0 {
		fl := len(s.oaKey())
		voff := uvarintLen(uint64(fl)) + fl
		if len(s)-voff == vp.size() {
			vp.put(unsafe.Slice(unsafe.StringData(string(s)), len(s))[voff:])
			return false
		}
		b.slots[i] = makeHslot(field, probeElem(&vp))
		return false
	}
	b.insert(makeHslot(field, probeElem(&vp)))
	return true
}

// probeElem returns the element the probe's bytes are stored as.
func probeElem(p *probe) Elem {
	if p.isInt {
		return Elem{Int: p.iv, IsInt: true}
	}
	return Elem{B: p.b}
}

// Delete removes field and reports whether it was there.
func (h Hash) Delete(field []byte) bool {
	r := h.r()
	defer h.account(cap(r.str))
	if b, ok := r.obj.(*hbig); ok {
		_, i := b.find(field)
		if i >= 0 {
			b.removeAt(i)
		}
		return i >= 0
	}
	p := newProbe(field)
	foff, _, end, ok := hlpFind(r.str, &p)
	if !ok {
		return false
	}
	count := hlpCount(r.str)
	r.str = resized(r.str, foff, end, 0)
	binary.LittleEndian.PutUint32(r.str, uint32(count-1))
	return true
}

// Reserve converts the hash to the large encoding when adding n fields
// would outgrow the compact one (Redis's hashTypeTryConversion).
func (h Hash) Reserve(n int) {
	if _, ok := h.r().obj.(*hbig); !ok && int64(n) > hashLimits.entries.Load() {
		before := cap(h.r().str)
		h.convert(n)
		h.account(before)
	}
}

// convert moves a compact hash to the large encoding, sized for hint
// fields, and returns it.
func (h Hash) convert(hint int) *hbig {
	r := h.r()
	b := &hbig{}
	b.init(max(hint, hlpCount(r.str)))
	var buf [20]byte
	h.Walk(func(f, v Elem) bool {
		fb := f.B
		if f.IsInt {
			fb = f.AppendTo(buf[:0])
		}
		b.insert(makeHslot(fb, v))
		return true
	})
	r.obj, r.str = b, nil
	return b
}

// Walk calls fn for every field and its value until fn returns false: in
// insertion order in the compact encoding, in table order in the large one.
// The hash must not change during the walk.
func (h Hash) Walk(fn func(field, value Elem) bool) {
	r := h.r()
	if b, ok := r.obj.(*hbig); ok {
		for _, s := range b.slots {
			if s != "" {
				if f, v := s.split(); !fn(f, v) {
					return
				}
			}
		}
		return
	}
	lp := r.str
	for off := hlpHeader; off < len(lp); {
		f, voff := decodeElem(lp, off)
		v, next := decodeElem(lp, voff)
		if !fn(f, v) {
			return
		}
		off = next
	}
}

// walkStable is Walk with a large hash's fields sorted by their bytes: an
// order that depends on the fields alone, not on the table's history.
func (h Hash) walkStable(fn func(field, value Elem) bool) {
	b, ok := h.r().obj.(*hbig)
	if !ok {
		h.Walk(fn)
		return
	}
	slots := make([]hslot, 0, b.n)
	for _, s := range b.slots {
		if s != "" {
			slots = append(slots, s)
		}
	}
	slices.SortFunc(slots, func(a, b hslot) int { return strings.Compare(a.oaKey(), b.oaKey()) })
	for _, s := range slots {
		if !fn(s.split()) {
			return
		}
	}
}

// Sample calls fn for count fields picked at random: distinct fields when
// unique (all of them, in Walk's order, when count >= Len), otherwise each
// pick independent of the others. The hash must not change during the call.
func (h Hash) Sample(count int, unique bool, fn func(field, value Elem)) {
	n := h.Len()
	if n == 0 || count <= 0 {
		return
	}
	if unique && count >= n {
		h.Walk(func(f, v Elem) bool { fn(f, v); return true })
		return
	}
	r := h.r()
	if b, ok := r.obj.(*hbig); ok {
		sampleSlots(b, count, unique, fn)
		return
	}
	// Compact: note every field's position once, then pick.
	lp := r.str
	pos := make([]int, 0, n)
	for off := hlpHeader; off < len(lp); off = skipElem(lp, skipElem(lp, off)) {
		pos = append(pos, off)
	}
	emit := func(off int) {
		f, voff := decodeElem(lp, off)
		v, _ := decodeElem(lp, voff)
		fn(f, v)
	}
	if !unique {
		for ; count > 0; count-- {
			emit(pos[rand.IntN(n)])
		}
		return
	}
	for i := 0; i < count; i++ { // a partial Fisher-Yates shuffle
		j := i + rand.IntN(n-i)
		pos[i], pos[j] = pos[j], pos[i]
		emit(pos[i])
	}
}

// sampleSlots is Sample for the large encoding: random slots, retried while
// empty (at least 3 in 16 are full), distinct ones remembered when unique.
func sampleSlots(b *hbig, count int, unique bool, fn func(field, value Elem)) {
	pick := func() int {
		for {
			if i := rand.IntN(len(b.slots)); b.slots[i] != "" {
				return i
			}
		}
	}
	switch {
	case !unique:
		for ; count > 0; count-- {
			fn(b.slots[pick()].split())
		}
	case count*3 > b.n:
		// Most of the hash: shuffle the full slots, take the first count.
		full := make([]hslot, 0, b.n)
		for _, s := range b.slots {
			if s != "" {
				full = append(full, s)
			}
		}
		for i := 0; i < count; i++ {
			j := i + rand.IntN(len(full)-i)
			full[i], full[j] = full[j], full[i]
			fn(full[i].split())
		}
	default:
		seen := make(map[int]struct{}, count)
		for len(seen) < count {
			i := pick()
			if _, dup := seen[i]; !dup {
				seen[i] = struct{}{}
				fn(b.slots[i].split())
			}
		}
	}
}

// Scan calls fn for fields from cursor on and returns the next cursor, 0
// when the iteration is complete. A compact hash is returned whole in one
// call, whatever the cursor, as Redis does for a listpack; a large one is
// walked in the order of its fields' hashes (see oaTable.scan).
func (h Hash) Scan(cursor uint64, count int, fn func(field, value Elem)) uint64 {
	b, ok := h.r().obj.(*hbig)
	if !ok {
		h.Walk(func(f, v Elem) bool { fn(f, v); return true })
		return 0
	}
	return b.scan(cursor, count, func(s hslot) { fn(s.split()) })
}
