package kubernetes

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// cli is what one bcpd role accepts, read from bcpd's own help so the test
// follows the flags wherever they are defined.
type cli struct {
	flags map[string]bool // without dashes
	env   map[string]bool // BCP_* variables named in the help
}

var (
	flagLine = regexp.MustCompile(`(?m)^\s{1,8}--?([a-z][a-z0-9-]*)`)
	envName  = regexp.MustCompile(`\bBCP_[A-Z0-9_]+\b`)
)

// bcpdBinary builds cmd/bcpd once per test run.
var bcpdBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "bcpd-manifests-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bcpd")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/bcpdev/bcp/cmd/bcpd").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/bcpd: %v\n%s", err, out)
	}
	return bin, nil
})

var (
	cliMu    sync.Mutex
	cliCache = map[string]*cli{}
)

// bcpdCLI returns the flags and variables of `bcpd <words>` (e.g. "edge" or
// "migrate up"), from `bcpd <words> -h`. The exit status is ignored (the
// flag package reports -h as an error); the output must list flags.
func bcpdCLI(words []string) (*cli, error) {
	key := strings.Join(words, " ")
	cliMu.Lock()
	defer cliMu.Unlock()
	if c, ok := cliCache[key]; ok {
		return c, nil
	}
	bin, err := bcpdBinary()
	if err != nil {
		return nil, err
	}
	out, _ := exec.Command(bin, append(append([]string{}, words...), "-h")...).CombinedOutput()
	c := &cli{flags: map[string]bool{}, env: map[string]bool{}}
	for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
		c.flags[m[1]] = true
	}
	for _, m := range envName.FindAllString(string(out), -1) {
		c.env[m] = true
	}
	// A sanity floor: every role has these; if the help lists none, the
	// parse (or the role) is wrong, and saying so beats a vacuous pass.
	if !c.flags["internal-addr"] || !c.env["BCP_DATABASE_URL"] {
		return nil, fmt.Errorf("bcpd %s -h lists no flags (unknown role, or the help's format changed):\n%s", key, out)
	}
	cliCache[key] = c
	return c, nil
}
