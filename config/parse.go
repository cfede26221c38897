package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ratekv/ratekv/internal/sdsargs"
)

// Reading the command line and config files. Arguments apply in the order
// given; a directive ratekv has a parameter for sets it (the last one
// wins, save lines add up as in Redis), any other Redis directive is
// collected and judged by the table in redisconf.go once everything is
// read, so that a later line or option can still change it.

// maxIncludeDepth bounds nested includes, so that a file that includes
// itself, directly or through others, is an error instead of a crash.
const maxIncludeDepth = 10

// ErrHelp and ErrVersion are returned by Parse for --help and --version.
var (
	ErrHelp    = errors.New("help requested")
	ErrVersion = errors.New("version requested")
)

// RefusedError lists the directives ratekv refuses to start with, one line
// each. Parse returns it after applying everything else.
type RefusedError struct {
	Lines []string
}

func (e *RefusedError) Error() string { return strings.Join(e.Lines, "\n") }

// Warning is a Redis directive that ratekv accepted without doing all it
// asks, or a value that works differently in ratekv.
type Warning struct {
	Directive, Value, Message string
}

func (w Warning) String() string { return directiveText(w.Directive, w.Value) + ": " + w.Message }

// Warnings returns the warnings of the last Parse, one per directive name,
// in the order the directives first appeared.
func (c *Config) Warnings() []Warning {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]Warning(nil), c.warnings...)
}

// Parse applies the command line: options (--name value or --name=value)
// and at most one config file in redis.conf syntax, in the order given.
// As with redis-server, `ratekv file --port 7000` lets the option win over
// the file; an option before the file is a default that the file may
// change (the Docker image passes --bind and --dir so). It recognises
// --help and --version by returning ErrHelp and ErrVersion. When the
// configuration asks for something ratekv must not ignore, the error is a
// *RefusedError and everything else has been applied.
func (c *Config) Parse(args []string) error {
	p := &parser{c: c, seen: map[string][]occurrence{}}
	file := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-h", "--help", "-help":
			return ErrHelp
		case "-v", "--version", "-version":
			return ErrVersion
		}
		if !file && a != "" && a[0] != '-' {
			file = true
			c.SetFile(a)
			if err := p.file(a, 0); err != nil {
				return err
			}
			continue
		}
		if !strings.HasPrefix(a, "--") || len(a) == 2 {
			return fmt.Errorf("unexpected argument %q (options are --name value)", a)
		}
		name, value, hasEq := strings.Cut(a[2:], "=")
		if !hasEq {
			if i+1 >= len(args) {
				if p, ok := Lookup(name); ok && p.Name == "save" {
					value = "" // `--save` alone would be odd; treat as disabling
				} else {
					return fmt.Errorf("option --%s needs a value", name)
				}
			} else {
				i++
				value = args[i]
				// As Redis's command line, the words of a directive that
				// takes several run to the next option:
				// --replicaof 10.0.0.1 6379, --save 900 1 300 10.
				if multiWord[strings.ToLower(name)] {
					for i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
						i++
						value += " " + args[i]
					}
				}
			}
		}
		if strings.EqualFold(name, "include") {
			if err := p.include(value, ".", "--include", 0); err != nil {
				return err
			}
			continue
		}
		if err := p.directive(name, value, "command line", directiveText("--"+name, value)); err != nil {
			if errors.Is(err, ErrUnknown) {
				return fmt.Errorf("unknown option --%s (see --help)", name)
			}
			return fmt.Errorf("option --%s %q: %w", name, value, err)
		}
	}
	return p.finish()
}

// multiWord are the directives whose value is several words, which the
// command line takes as separate arguments, as Redis's does. Other options
// take one argument, so that a config file may follow them.
var multiWord = map[string]bool{
	"bind": true, "save": true, "replicaof": true, "slaveof": true, "user": true,
	"client-output-buffer-limit": true, "rename-command": true, "tls-protocols": true,
	"ratelimit-metrics-groups": true, "latency-tracking-info-percentiles": true,
}

// ParseFile applies the lines of a config file in redis.conf syntax, as
// Parse does for a file; relative includes are read from the working
// directory.
func (c *Config) ParseFile(text string) error {
	p := &parser{c: c, seen: map[string][]occurrence{}}
	if err := p.text(text, "config", ".", 0); err != nil {
		return err
	}
	return p.finish()
}

// parser is the state of one Parse.
type parser struct {
	c     *Config
	seen  map[string][]occurrence // the directives of redisDirectives met
	order []string                // their names, first met first
	saved bool                    // a save directive was applied
}

// occurrence is one use of a directive: its value, where it was given and
// as it was written.
type occurrence struct{ value, where, text string }

// file applies the config file at path, reached through depth includes.
func (p *parser) file(path string, depth int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading config file: %w", err)
	}
	return p.text(string(data), path, filepath.Dir(path), depth)
}

// text applies config file lines: one "name value ..." per line, '#'
// comments, arguments quoted as in redis-cli; multiple values are joined by
// spaces ("save 900 1 300 10"). name labels errors; dir is where relative
// includes are looked for.
func (p *parser) text(text, name, dir string, depth int) error {
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		where := fmt.Sprintf("%s: line %d", name, n+1)
		words, ok := sdsargs.Split(line)
		if !ok {
			return fmt.Errorf("%s: unbalanced quotes", where)
		}
		if len(words) == 0 {
			continue
		}
		directive := strings.ToLower(words[0])
		if directive == "user" {
			if err := p.user(words[1:]); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			continue
		}
		if directive == "include" {
			if len(words) != 2 {
				return fmt.Errorf("%s: include takes one file name", where)
			}
			if err := p.include(words[1], dir, where, depth); err != nil {
				return err
			}
			continue
		}
		value := strings.Join(words[1:], " ")
		if err := p.directive(directive, value, where, line); err != nil {
			if errors.Is(err, ErrUnknown) {
				return fmt.Errorf("%s: unknown option %q", where, directive)
			}
			return fmt.Errorf("%s: %s %q: %w", where, directive, value, err)
		}
	}
	return nil
}

// include applies the files that an include directive at where names. A
// relative path is taken from dir, the including file's directory (Redis
// takes it from the working directory, which under a service manager is
// rarely the configuration's). As in Redis 7, a pattern with wildcards
// includes the files it matches in lexical order, possibly none; a plain
// path must exist.
func (p *parser) include(path, dir, where string, depth int) error {
	if depth >= maxIncludeDepth {
		return fmt.Errorf("%s: include %q: includes nested more than %d deep (does a file include itself?)", where, path, maxIncludeDepth)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	files := []string{path}
	if strings.ContainsAny(path, "*?[") {
		var err error
		if files, err = filepath.Glob(path); err != nil {
			return fmt.Errorf("%s: include %q: %w", where, path, err)
		}
	}
	for _, f := range files {
		if err := p.file(f, depth+1); err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
				return fmt.Errorf("%s: include %q: %w", where, path, err)
			}
			return err
		}
	}
	return nil
}

// user collects a user directive (its words after "user") for the
// command layer, which checks and applies the rules at start (Users).
func (p *parser) user(words []string) error {
	if len(words) == 0 {
		return errors.New("user needs a user name and its rules")
	}
	p.c.mu.Lock()
	p.c.users = append(p.c.users, words)
	p.c.mu.Unlock()
	return nil
}

// Users returns the user directives of the configuration, each as its
// words after "user": the name, then ACL rules.
func (c *Config) Users() [][]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([][]string(nil), c.users...)
}

// directive applies one directive, from a file or the command line.
func (p *parser) directive(name, value, where, text string) error {
	name = strings.ToLower(name)
	if name == "user" {
		words, ok := sdsargs.Split(value)
		if !ok {
			return errors.New("unbalanced quotes")
		}
		return p.user(words)
	}
	if _, ok := redisDirectives[name]; ok {
		if _, met := p.seen[name]; !met {
			p.order = append(p.order, name)
		}
		p.seen[name] = append(p.seen[name], occurrence{value, where, text})
		return nil
	}
	if prm, ok := Lookup(name); ok && prm.Name == "save" {
		var err error
		if value, err = p.save(value); err != nil {
			return err
		}
	}
	return p.c.Set(name, value)
}

// save returns the save rules in force after a save directive of value:
// as in Redis, the first one of a Parse replaces the default, later ones
// add their rules, and an empty one removes every rule.
func (p *parser) save(value string) (string, error) {
	rules, err := parseSave(value)
	if err != nil {
		return "", err
	}
	first := !p.saved
	p.saved = true
	cur := p.c.get(Save.index()).text
	if first || len(rules) == 0 || cur == "" {
		return value, nil
	}
	return cur + " " + value, nil
}

// finish judges the Redis directives met, records the warnings and returns
// the refusals.
func (p *parser) finish() error {
	var warnings []Warning
	var refused []string
	for _, name := range p.order {
		occ := p.seen[name]
		vals := make([]string, len(occ))
		for i, o := range occ {
			vals[i] = o.value
		}
		last := occ[len(occ)-1]
		switch v, why := redisDirectives[name].rule(p.c, vals); v {
		case warn:
			warnings = append(warnings, Warning{name, last.value, why})
		case refuse:
			refused = append(refused, fmt.Sprintf("%s: %s: %s", last.where, last.text, why))
		}
	}
	warnings = append(warnings, p.c.notes()...)
	p.c.mu.Lock()
	p.c.warnings = warnings
	p.c.mu.Unlock()
	if len(refused) > 0 {
		return &RefusedError{Lines: refused}
	}
	return nil
}

// directiveText shows a directive as a config file line would.
func directiveText(name, value string) string {
	if value == "" {
		return name + ` ""`
	}
	return name + " " + value
}
