package config

import (
	"errors"
	"strconv"
	"strings"
)

// client-output-buffer-limit, as Redis's: "class hard soft seconds"
// groups, for classes normal, replica (or slave) and pubsub; a value
// changes the classes it names and keeps the others
// (updateClientOutputBufferLimit). The canonical form names all three, as
// Redis 7's CONFIG GET: "normal 0 0 0 slave 268435456 67108864 60 pubsub
// 33554432 8388608 60".

// OutputClass is a client class of client-output-buffer-limit.
type OutputClass int

// The classes, in CONFIG GET's order.
const (
	OutputNormal OutputClass = iota
	OutputReplica
	OutputPubSub
)

var outputClassNames = [...]string{"normal", "slave", "pubsub"}

// OutputLimit is one class's limit: a client whose unsent output reaches
// Hard bytes, or stays at Soft bytes or more for Seconds, is disconnected;
// 0 bytes is no limit. The zero value is no limit.
type OutputLimit struct {
	Hard, Soft, Seconds int64
}

// OutputLimitsKey is the type of ClientOutputBufferLimit, read with
// Config.OutputLimit.
type OutputLimitsKey struct{ key }

// OutputLimit returns class's client-output-buffer-limit.
func (c *Config) OutputLimit(class OutputClass) OutputLimit {
	return c.get(ClientOutputBufferLimit.index()).limits[class]
}

// updateOutputLimits applies v's groups to cur (canonical) and returns the
// canonical result, with Redis's errors.
func updateOutputLimits(cur, v string) (string, error) {
	limits, err := parseOutputLimits(cur, [3]OutputLimit{})
	if err != nil {
		return "", err
	}
	if limits, err = parseOutputLimits(v, limits); err != nil {
		return "", err
	}
	var b strings.Builder
	for i, l := range limits {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(outputClassNames[i])
		for _, n := range []int64{l.Hard, l.Soft, l.Seconds} {
			b.WriteByte(' ')
			b.WriteString(strconv.FormatInt(n, 10))
		}
	}
	return b.String(), nil
}

// parseOutputLimits applies the groups of v to limits; nothing changes
// when one of them is bad.
func parseOutputLimits(v string, limits [3]OutputLimit) ([3]OutputLimit, error) {
	f := strings.Fields(v)
	if len(f)%4 != 0 {
		return limits, errors.New("Wrong number of arguments in buffer limit configuration.")
	}
	for i := 0; i < len(f); i += 4 {
		class := -1
		switch strings.ToLower(f[i]) {
		case "normal":
			class = int(OutputNormal)
		case "replica", "slave":
			class = int(OutputReplica)
		case "pubsub":
			class = int(OutputPubSub)
		}
		if class < 0 {
			return limits, errors.New("Invalid client class specified in buffer limit configuration.")
		}
		hard, herr := ParseMemory(f[i+1])
		soft, serr := ParseMemory(f[i+2])
		secs, err := strconv.ParseInt(f[i+3], 10, 32)
		if herr != nil || serr != nil || err != nil || secs < 0 {
			return limits, errors.New("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		limits[class] = OutputLimit{Hard: hard, Soft: soft, Seconds: secs}
	}
	return limits, nil
}
