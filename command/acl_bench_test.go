package command

import (
	"strings"
	"testing"
)

// BenchmarkACLCheck is the check of a restricted user's CL.THROTTLE alone.
func BenchmarkACLCheck(b *testing.B) {
	r, err := applyRules(strings.Fields("on nopass +@ratelimit ~rl:*"))
	if err != nil {
		b.Fatal(err)
	}
	cmd := commands["cl.throttle"]
	args := [][]byte{[]byte("CL.THROTTLE"), []byte("rl:100042"), []byte("100"), []byte("1000"), []byte("1")}
	var buf []int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var res int
		res, _, buf = r.check(cmd, args, buf)
		if res != aclOK {
			b.Fatal(res)
		}
	}
}
