package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

func anyValue(v string) (string, error) { return v, nil }

func nonEmpty(v string) (string, error) {
	if strings.TrimSpace(v) == "" {
		return "", errors.New("must not be empty")
	}
	return v, nil
}

// parseInt parses an integer as Redis's string2ll does, stricter than
// strconv.ParseInt: an optional minus and digits without leading zeros,
// nothing around them (" 5", "+5", "05" and "-0" are refused, so a value
// is stored exactly as CONFIG GET will show it).
func parseInt(v string) (int64, error) {
	d := strings.TrimPrefix(v, "-")
	if d == "" || (d[0] == '0' && (len(d) > 1 || len(v) > 1)) {
		return 0, strconv.ErrSyntax
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.ParseInt(v, 10, 64)
}

func intRange(lo, hi int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := parseInt(v)
		if err != nil {
			return "", errors.New("argument couldn't be parsed into an integer")
		}
		if n < lo || n > hi {
			return "", fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

// oneOf is the check of an enum parameter. The error lists opts in the
// order given, which for Redis's parameters is Redis's.
func oneOf(opts ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		lv := strings.ToLower(v)
		for _, o := range opts {
			if lv == o {
				return o, nil
			}
		}
		return "", fmt.Errorf("argument(s) must be one of the following: %s", strings.Join(opts, ", "))
	}
}

// yesNo is the check of a boolean parameter, with Redis's error text
// (boolConfigSet).
func yesNo(v string) (string, error) {
	switch lv := strings.ToLower(v); lv {
	case "yes", "no":
		return lv, nil
	}
	return "", errors.New("argument must be 'yes' or 'no'")
}

func memRange(lo, hi int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := ParseMemory(v)
		if err != nil {
			return "", err
		}
		if n < lo || n > hi {
			return "", fmt.Errorf("argument must be a memory value between %d and %d bytes", lo, hi)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

// ParseMemory parses a redis.conf memory value: digits with an optional
// unit, k/m/g (powers of 1000) or kb/mb/gb (powers of 1024), any case. As
// in Redis, no sign and no spaces.
func ParseMemory(v string) (int64, error) {
	s := strings.ToLower(v)
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mul = strings.TrimSuffix(s, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || s == "" || s[0] < '0' || s[0] > '9' {
		return 0, errors.New("argument must be a memory value")
	}
	if n > (1<<62)/mul {
		return 0, errors.New("argument must be a memory value (too large)")
	}
	return n * mul, nil
}

// supervisedCheck accepts Redis's supervised modes but upstart, whose
// SIGSTOP handshake ratekv does not do.
func supervisedCheck(v string) (string, error) {
	if strings.EqualFold(v, "upstart") {
		return "", errors.New("upstart is not supported (systemd, auto or no)")
	}
	return oneOf("systemd", "auto", "no")(v)
}

func shardsCheck(v string) (string, error) {
	n, err := parseInt(v)
	if err != nil || n < 0 || n > 16384 || (n != 0 && n&(n-1) != 0) {
		return "", errors.New("must be 0 (automatic) or a power of two up to 16384")
	}
	return strconv.FormatInt(n, 10), nil
}

// saveCheck validates "seconds changes [seconds changes ...]" pairs (see
// parseSave) and returns them separated by single spaces.
func saveCheck(v string) (string, error) {
	rules, err := parseSave(v)
	if err != nil || len(rules) == 0 {
		return "", err
	}
	return strings.Join(strings.Fields(v), " "), nil
}

// parseSave parses the save parameter as Redis does: seconds at least 1,
// changes at least 0 (a rule of 0 seconds would be due on every tick: a
// BGSAVE every second, forever). No words, or only empty quotes, is no rule.
func parseSave(v string) ([]SaveRule, error) {
	f := strings.Fields(v)
	if len(f) == 1 && (f[0] == `""` || f[0] == "''") {
		return nil, nil
	}
	if len(f)%2 != 0 {
		return nil, errInvalidSave
	}
	var rules []SaveRule
	for i := 0; i < len(f); i += 2 {
		s, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || s < 1 {
			return nil, errInvalidSave
		}
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || n < 0 {
			return nil, errInvalidSave
		}
		rules = append(rules, SaveRule{Seconds: s, Changes: n})
	}
	return rules, nil
}

// errInvalidSave is Redis's text for a bad save parameter.
var errInvalidSave = errors.New("Invalid save parameters")

// The maxmemory policies, in Redis's order (its error lists them so).
var maxmemoryPolicies = []string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
	"allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"}

// announceHostname checks cluster-announce-hostname as Redis does
// (isValidAnnouncedHostname): letters, digits, '-' and '.', under 256
// bytes.
func announceHostname(v string) (string, error) {
	if len(v) > 255 {
		return "", errors.New("Hostnames must be less than 256 characters")
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return "", errors.New("Hostnames may only contain alphanumeric characters, hyphens or dots")
		}
	}
	return v, nil
}

// announceIP checks cluster-announce-ip: Redis takes any text, but a space
// or a control character would break the lines of CLUSTER NODES.
func announceIP(v string) (string, error) {
	if len(v) > 45 { // NET_IP_STR_LEN - 1
		return "", errors.New("IP addresses must be less than 46 characters")
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] == 0x7f || v[i] == '@' || v[i] == ',' {
			return "", errors.New("IP addresses may not contain spaces, control characters, '@' or ','")
		}
	}
	return v, nil
}

// percentiles is the check of latency-tracking-info-percentiles: numbers
// from 0 to 100 separated by spaces, with Redis's errors; the canonical
// form prints each as Redis does (50, 99.9).
func percentiles(v string) (string, error) {
	fields := strings.Fields(v)
	for i, f := range fields {
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(p) {
			return "", errors.New("Invalid latency-tracking-info-percentiles parameters")
		}
		if p < 0 || p > 100 {
			return "", errors.New("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
		}
		fields[i] = strconv.FormatFloat(p, 'f', -1, 64)
	}
	return strings.Join(fields, " "), nil
}

// Percentiles parses a value percentiles accepted.
func Percentiles(v string) []float64 {
	var out []float64
	for _, f := range strings.Fields(v) {
		if p, err := strconv.ParseFloat(f, 64); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// MaxMetricsGroups is the most patterns ratelimit-metrics-groups takes, so
// that the decision counters' cardinality stays bounded.
const MaxMetricsGroups = 32

// metricsGroupsCheck accepts up to MaxMetricsGroups distinct glob patterns
// of at most 128 bytes, none of them "other" (the group of the rest), and
// returns them separated by single spaces.
func metricsGroupsCheck(v string) (string, error) {
	f := strings.Fields(v)
	if len(f) > MaxMetricsGroups {
		return "", fmt.Errorf("at most %d patterns", MaxMetricsGroups)
	}
	for i, p := range f {
		switch {
		case len(p) > 128:
			return "", errors.New("a pattern is longer than 128 bytes")
		case p == "other":
			return "", errors.New(`"other" names the group of the keys no pattern matches`)
		}
		for _, q := range f[:i] {
			if q == p {
				return "", fmt.Errorf("pattern %q is given twice", p)
			}
		}
	}
	return strings.Join(f, " "), nil
}

// oneAddress accepts a single address (metrics-bind), unlike bind's list.
func oneAddress(v string) (string, error) {
	if f := strings.Fields(v); len(f) != 1 || f[0] != v {
		return "", errors.New("must be one address")
	}
	return v, nil
}

// replicaOf checks a replicaof value: "host port", or "" (also "no one"
// and "NO ONE") for a primary.
func replicaOf(v string) (string, error) {
	f := strings.Fields(v)
	if len(f) == 0 || len(f) == 2 && strings.EqualFold(f[0], "no") && strings.EqualFold(f[1], "one") {
		return "", nil
	}
	if len(f) != 2 {
		return "", errors.New(`must be "host port" or "no one"`)
	}
	if p, err := strconv.Atoi(f[1]); err != nil || p < 0 || p > 65535 {
		return "", errors.New("the port must be an integer from 0 to 65535")
	}
	return f[0] + " " + f[1], nil
}
