package shards

// Encodings of the object kinds (see codec.go for the layout). They go
// through the types' methods only (Walk, Add, Each), so the in-memory
// encodings can change without touching the format on disk.

import (
	"encoding/binary"
	"math"
)

// appendZSet appends a sorted set's count and members in ascending order.
// A nil set encodes as empty.
func appendZSet(dst []byte, z *ZSet) []byte {
	if z == nil {
		return binary.AppendUvarint(dst, 0)
	}
	n := z.Len()
	dst = binary.AppendUvarint(dst, uint64(n))
	var num [20]byte
	z.Walk(0, n, false, func(m ZMember) bool {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(m.Score))
		mb := m.Member
		if m.IsInt {
			mb = m.AppendTo(num[:0])
		}
		dst = binary.AppendUvarint(dst, uint64(len(mb)))
		dst = append(dst, mb...)
		return true
	})
	return dst
}

// zset decodes a sorted set. A NaN score, a repeated member or no member
// at all is bad data: no key holds an empty set (the commands delete a key
// whose set they empty, and Redis's RESTORE refuses one), and the commands
// rely on it.
func (d *decoder) zset() *ZSet {
	n := d.length(8 + 1)
	if d.err == nil && n == 0 {
		d.fail()
	}
	if d.err != nil {
		return nil
	}
	// The encoding Redis would pick for n members: peek at the first
	// member's length for the value-size limit.
	first := 0
	if len(d.b)-d.off > 8 {
		if l, k := binary.Uvarint(d.b[d.off+8:]); k > 0 && l < math.MaxInt32 {
			first = int(l)
		}
	}
	z := NewZSet(n, first)
	for i := 0; i < n; i++ {
		score := d.float()
		member := d.bytes()
		if d.err != nil {
			return nil
		}
		if res, _ := z.Add(score, member, 0); res != ZAdded {
			d.fail()
			return nil
		}
	}
	return z
}

// appendSlidingLog appends a sliding log's entry count and runs. A nil log
// encodes as empty.
func appendSlidingLog(dst []byte, l *SlidingLog) []byte {
	if l == nil || l.Len() == 0 {
		return binary.AppendUvarint(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(l.Len()))
	first := true
	var prev int64
	l.Each(func(ts, count int64) {
		if first {
			dst = binary.AppendVarint(dst, ts)
			first = false
		} else {
			dst = binary.AppendUvarint(dst, uint64(ts-prev))
		}
		dst = binary.AppendUvarint(dst, uint64(count-1))
		prev = ts
	})
	return dst
}

// maxLogEntries bounds a decoded sliding log's entry count, far above any
// real one, so that sums cannot overflow.
const maxLogEntries = 1 << 60

// slidingLog decodes a sliding log. Runs must account for exactly the
// announced number of entries, timestamps must lie within ±maxTime.
func (d *decoder) slidingLog() *SlidingLog {
	l := &SlidingLog{}
	total := d.uvarint()
	if d.err != nil || total > maxLogEntries {
		d.fail()
		return nil
	}
	var ts int64
	for seen := uint64(0); seen < total; {
		if seen == 0 {
			ts = d.varint()
		} else {
			delta := d.uvarint()
			if delta > math.MaxInt64 || ts > math.MaxInt64-int64(delta) {
				d.fail()
			}
			ts += int64(delta)
		}
		if !inTime(ts) {
			d.fail()
		}
		count := d.uvarint()
		if d.err != nil || count > total-seen-1 {
			d.fail()
			return nil
		}
		l.Add(ts, int64(count)+1)
		seen += count + 1
	}
	return l
}

// appendHash appends a hash's field count and its fields and values, in
// walkStable's order, so that a decoded hash encodes to the same bytes
// again.
func appendHash(dst []byte, h Hash) []byte {
	dst = binary.AppendUvarint(dst, uint64(h.Len()))
	h.walkStable(func(f, v Elem) bool {
		dst = binary.AppendUvarint(dst, uint64(f.Len()))
		dst = f.AppendTo(dst)
		dst = binary.AppendUvarint(dst, uint64(v.Len()))
		dst = v.AppendTo(dst)
		return true
	})
	return dst
}

// hash decodes a hash, in the encoding Redis would pick for it. A repeated
// field or no field at all is bad data, as for sorted sets.
func (d *decoder) hash() refVal {
	n := d.length(2)
	if d.err == nil && n == 0 {
		d.fail()
	}
	if d.err != nil {
		return refVal{}
	}
	h := newHashValue()
	h.Reserve(n)
	for i := 0; i < n; i++ {
		field := d.bytes()
		value := d.bytes()
		if d.err != nil {
			return refVal{}
		}
		if !h.Set(field, value) {
			d.fail()
			return refVal{}
		}
	}
	return *h.r()
}

// appendList appends a list's element count and its elements from the
// head.
func appendList(dst []byte, l List) []byte {
	dst = binary.AppendUvarint(dst, uint64(l.Len()))
	l.Walk(0, false, func(e Elem) bool {
		dst = binary.AppendUvarint(dst, uint64(e.Len()))
		dst = e.AppendTo(dst)
		return true
	})
	return dst
}

// list decodes a list, in the encoding Redis would pick for it. No
// element at all is bad data, as for sorted sets.
func (d *decoder) list() refVal {
	n := d.length(1)
	if d.err == nil && n == 0 {
		d.fail()
	}
	if d.err != nil {
		return refVal{}
	}
	l := newListValue()
	for i := 0; i < n; i++ {
		b := d.bytes()
		if d.err != nil {
			return refVal{}
		}
		l.Push(b, false)
	}
	return *l.r()
}
