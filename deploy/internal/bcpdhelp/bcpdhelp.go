// Package bcpdhelp tells the deployment tests which flags and environment
// variables bcpd has, read from the help of a fresh build, so they follow
// the flags wherever cmd/bcpd defines them.
package bcpdhelp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// CLI is what one bcpd role accepts.
type CLI struct {
	Flags map[string]bool // without dashes
	Env   map[string]bool // BCP_* variables named in the help
}

var (
	flagLine = regexp.MustCompile(`(?m)^\s{1,8}--?([a-z][a-z0-9-]*)`)
	envName  = regexp.MustCompile(`\bBCP_[A-Z0-9_]+\b`)
)

// Binary builds cmd/bcpd once per test process (go test puts its own go
// command first on PATH) and returns its path.
var Binary = sync.OnceValues(func() (string, error) {
	var err error
	if buildDir, err = os.MkdirTemp("", "bcpdhelp-"); err != nil {
		return "", err
	}
	bin := filepath.Join(buildDir, "bcpd")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/bcpdev/bcp/cmd/bcpd").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/bcpd: %v\n%s", err, out)
	}
	return bin, nil
})

var buildDir string

// Main runs a test package's tests and removes the build: call it from
// TestMain.
func Main(m interface{ Run() int }) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

var (
	mu    sync.Mutex
	cache = map[string]*CLI{}
)

// Of returns the flags and variables of `bcpd <words>` (e.g. "edge" or
// "migrate up") from `bcpd <words> -h`. The exit status is ignored (the
// flag package reports -h as an error); the output must list flags.
func Of(words ...string) (*CLI, error) {
	key := strings.Join(words, " ")
	mu.Lock()
	defer mu.Unlock()
	if c, ok := cache[key]; ok {
		return c, nil
	}
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	out, _ := exec.Command(bin, append(append([]string{}, words...), "-h")...).CombinedOutput()
	c := &CLI{Flags: map[string]bool{}, Env: map[string]bool{}}
	for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
		c.Flags[m[1]] = true
	}
	for _, m := range envName.FindAllString(string(out), -1) {
		c.Env[m] = true
	}
	// Every role has these; if the help lists none, the role or the parse
	// is wrong, and saying so beats a vacuous pass.
	if !c.Flags["internal-addr"] || !c.Env["BCP_DATABASE_URL"] {
		return nil, fmt.Errorf("bcpd %s -h lists no flags (unknown role, or the help's format changed):\n%s", key, out)
	}
	cache[key] = c
	return c, nil
}

// FlagVar is the environment variable bcpd pairs with a flag.
func FlagVar(flag string) string {
	return "BCP_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// SecretVar says whether a bcpd setting's value is a secret, so it may come
// only from a secret store. A *_FILE setting names a path, not the secret.
func SecretVar(name string) bool {
	return !strings.HasSuffix(name, "_FILE") && secretWord.MatchString(name)
}

var secretWord = regexp.MustCompile(`TOKEN|KEY|PASSWORD|SECRET|DATABASE_URL`)

// URLPassword matches a URL with user:password@ in it, e.g. a database URL
// pasted inline.
var URLPassword = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#@\s:]+:[^/?#@\s]+@`)
