// Package resptest helps tests read raw RESP replies.
package resptest

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ReadReply copies one RESP2/RESP3 reply from rd to b, byte for byte.
func ReadReply(rd *bufio.Reader, b *strings.Builder) error {
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	b.WriteString(line)
	if len(line) < 3 {
		return fmt.Errorf("short line %q", line)
	}
	body := strings.TrimSuffix(line[1:], "\r\n")
	switch line[0] {
	case '$', '=', '!':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return err
		}
		b.Write(buf)
	case '*', '~', '>':
		n, _ := strconv.Atoi(body)
		for i := 0; i < n; i++ {
			if err := ReadReply(rd, b); err != nil {
				return err
			}
		}
	case '%':
		n, _ := strconv.Atoi(body)
		for i := 0; i < 2*n; i++ {
			if err := ReadReply(rd, b); err != nil {
				return err
			}
		}
	}
	return nil
}
