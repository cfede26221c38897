// Package sdsargs splits a line into words as Redis's sdssplitargs does:
// inline requests and config file lines are read with it.
package sdsargs

// Split splits a line into arguments like Redis's sdssplitargs: spaces
// separate words, "double quotes" support \n \r \t \b \a \\ \" and \xHH
// escapes, 'single quotes' support \'; a closing quote must be followed by
// a space or the end. It reports false for unbalanced quotes.
func Split(line string) ([]string, bool) {
	var out []string
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return out, true
		}
		var cur []byte
		inq, insq := false, false
		for {
			if inq {
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				if c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]) {
					cur = append(cur, hexVal(line[i+2])<<4|hexVal(line[i+3]))
					i += 3
				} else if c == '\\' && i+1 < len(line) {
					i++
					switch line[i] {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, line[i])
					}
				} else if c == '"' {
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					i++
					break
				} else {
					cur = append(cur, c)
				}
			} else if insq {
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				if c == '\\' && i+1 < len(line) && line[i+1] == '\'' {
					i++
					cur = append(cur, '\'')
				} else if c == '\'' {
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					i++
					break
				} else {
					cur = append(cur, c)
				}
			} else {
				if i >= len(line) {
					break
				}
				c := line[i]
				if isSpace(c) {
					break
				} else if c == '"' {
					inq = true
				} else if c == '\'' {
					insq = true
				} else {
					cur = append(cur, c)
				}
			}
			i++
		}
		if cur == nil {
			cur = []byte{}
		}
		out = append(out, string(cur))
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// AppendRepr appends a in double quotes with Redis's escapes (sdscatrepr):
// what MONITOR shows of an argument and CONFIG REWRITE writes of a value,
// and what Split reads back as a.
func AppendRepr(b, a []byte) []byte {
	b = append(b, '"')
	for _, ch := range a {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= 0x20 && ch < 0x7f {
				b = append(b, ch)
			} else {
				const hex = "0123456789abcdef"
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(b, '"')
}
