package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform/devenv"
)

// The README's walkthroughs, run as a reader runs them: every ```sh block
// preceded by the comment <!-- walkthrough: NAME --> is a step of the
// walkthrough NAME, in the README's order; a ```text block right after a
// step is what that step prints. TestREADMEWalkthroughs runs each
// walkthrough's steps in one bash (set -euo pipefail: a variable or a
// shell function of one step is there in the next), in a directory laid
// out as after `make run` (bin/bcpctl built from this tree, .bcp the data
// directory of the platform `make run` starts), with only the ports given
// through $PUBLIC_PORT and $INTERNAL_PORT. A step that fails, or prints
// other lines than its text block says, fails the test.

// walkthroughMarker starts a walkthrough step.
var walkthroughMarker = regexp.MustCompile(`^\s*<!--\s*walkthrough:\s*([a-z0-9-]+)\s*-->\s*$`)

// walkthroughStep is one ```sh block of a walkthrough and what it prints
// (nil: not checked).
type walkthroughStep struct {
	line   int // of the block's first line, 1-based
	script string
	want   []string
}

// walkthroughs reads the README's walkthroughs, in the order of their
// first step.
func walkthroughs(readme string) (names []string, steps map[string][]walkthroughStep, err error) {
	lines := strings.Split(readme, "\n")
	steps = map[string][]walkthroughStep{}
	// fence reads the fenced block opening at lines[i] (after any indent)
	// with one of the infos; it returns its lines, without the indent, and
	// the index after the closing fence.
	fence := func(i int, infos ...string) ([]string, int, bool) {
		if i >= len(lines) {
			return nil, i, false
		}
		open := lines[i]
		indent := open[:len(open)-len(strings.TrimLeft(open, " "))]
		info := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(open), "```"))
		if !strings.HasPrefix(strings.TrimSpace(open), "```") || !slices.Contains(infos, info) {
			return nil, i, false
		}
		var body []string
		for j := i + 1; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == "```" {
				return body, j + 1, true
			}
			body = append(body, strings.TrimPrefix(lines[j], indent))
		}
		return nil, i, false
	}
	skipBlank := func(i int) int {
		for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
			i++
		}
		return i
	}
	for i := 0; i < len(lines); i++ {
		m := walkthroughMarker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		start := skipBlank(i + 1)
		script, next, ok := fence(start, "sh", "bash")
		if !ok {
			return nil, nil, fmt.Errorf("README.md:%d: %q is not followed by a ```sh block", i+1, strings.TrimSpace(lines[i]))
		}
		st := walkthroughStep{line: start + 2, script: strings.Join(script, "\n")}
		if want, after, ok := fence(skipBlank(next), "text"); ok {
			st.want, next = want, after
		}
		if _, seen := steps[m[1]]; !seen {
			names = append(names, m[1])
		}
		steps[m[1]] = append(steps[m[1]], st)
		i = next - 1
	}
	return names, steps, nil
}

// walkthroughMatch says whether got is want, where "…" in a line of want stands
// for any text within the line and a line that is only "…" for any number
// of lines (none too). Trailing blank lines, and spaces at the end of a
// line, do not count.
func walkthroughMatch(want, got []string) bool {
	want, got = trimBlankLines(want), trimBlankLines(got)
	var match func(w, g int) bool
	match = func(w, g int) bool {
		if w == len(want) {
			return g == len(got)
		}
		if strings.TrimSpace(want[w]) == "…" {
			for k := g; k <= len(got); k++ {
				if match(w+1, k) {
					return true
				}
			}
			return false
		}
		return g < len(got) && walkthroughGlob(strings.TrimRight(want[w], " \t")).MatchString(strings.TrimRight(got[g], " \t")) && match(w+1, g+1)
	}
	return match(0, 0)
}

// walkthroughGlob is the pattern of an expected line: "…" is any text, a
// run of spaces one or more (a table's columns are as wide as their
// longest cell).
func walkthroughGlob(w string) *regexp.Regexp {
	parts := strings.Split(w, "…")
	for i, p := range parts {
		parts[i] = spaces.ReplaceAllString(regexp.QuoteMeta(p), ` +`)
	}
	return regexp.MustCompile(`^` + strings.Join(parts, `.*`) + `$`)
}

var spaces = regexp.MustCompile(` +`)

func trimBlankLines(l []string) []string {
	for len(l) > 0 && strings.TrimSpace(l[len(l)-1]) == "" {
		l = l[:len(l)-1]
	}
	return l
}

// The runner's own parts: the README's structure, the matching rule.
func TestWalkthroughParsing(t *testing.T) {
	readme := "intro\n<!-- walkthrough: a -->\n```sh\necho one\n```\n\n```text\none\n```\n" +
		"   <!-- walkthrough: b -->\n   ```sh\n   echo two\n   ```\n" +
		"<!-- walkthrough: a -->\n```sh\necho three\n```\n```json\n{}\n```\n"
	names, steps, err := walkthroughs(readme)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "a,b" || len(steps["a"]) != 2 || len(steps["b"]) != 1 {
		t.Fatalf("names %v steps %+v", names, steps)
	}
	if a := steps["a"]; a[0].script != "echo one" || strings.Join(a[0].want, "|") != "one" || a[0].line != 4 ||
		a[1].script != "echo three" || a[1].want != nil || steps["b"][0].script != "echo two" {
		t.Fatalf("steps %+v", steps)
	}
	if _, _, err := walkthroughs("<!-- walkthrough: x -->\ntext\n"); err == nil {
		t.Fatal("a marker without its block was accepted")
	}
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		{"a\nb", "a\nb\n", true},
		{"a\nb", "a\nc", false},
		{"a\nb", "a", false},
		{"a", "a\nb", false},
		{"id …", "id 42", true},
		{"id …", "the id 42", false},
		{"a\n…\nz", "a\nz", true},
		{"a\n…\nz", "a\nb\nc\nz", true},
		{"a\n…\nz", "a\nb\nc", false},
		{"x … y … z", "x 1 y 2 z", true},
		{"ID  NAME", "ID      NAME", true},
		{"ID  NAME", "IDNAME", false},
		{"done  x", "done   x   ", true},
	} {
		if got := walkthroughMatch(strings.Split(c.want, "\n"), strings.Split(c.got, "\n")); got != c.ok {
			t.Errorf("walkthroughMatch(%q, %q) = %v", c.want, c.got, got)
		}
	}
}

// TestREADMEWalkthroughs runs every README walkthrough against the
// platform `make run` starts (bcpd dev: the demo merchant and agent, the
// PSP simulator), each in its own bash, in the README's order.
func TestREADMEWalkthroughs(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("the README's walkthroughs need bash: %v", err)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("the README's walkthroughs run curl (apt-get install -y curl; .ci/run does it): %v", err)
	}
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	names, steps, err := walkthroughs(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, need := range []string{"purchase", "onboard", "golive", "ap2"} {
		if len(steps[need]) == 0 {
			t.Fatalf("README.md has no walkthrough %q (<!-- walkthrough: %s --> before its ```sh blocks); it has %v", need, need, names)
		}
	}

	// The directory a reader works in after `make run`: bin/bcpctl, .bcp.
	work := t.TempDir()
	build := exec.Command(goTool(t), "build", "-o", filepath.Join(work, "bin", "bcpctl"), "./cmd/bcpctl")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/bcpctl: %v\n%s", err, out)
	}
	// The platform as `make run` starts it (the demo merchant with its
	// first day of history), on ports of our own given as `make run
	// PUBLIC_PORT=… INTERNAL_PORT=…` gives them: the advertised URLs carry
	// the public one.
	ports := walkthroughPorts(t, 2)
	publicPort, internalPort := ports[0], ports[1]
	d := testdb.New(t)
	var banner bytes.Buffer
	e, err := devenv.Start(context.Background(), devenv.Options{DataDir: filepath.Join(work, ".bcp"), DatabaseURL: d.AppURL, OwnerURL: d.OwnerURL,
		PublicAddr: "127.0.0.1:" + publicPort, InternalAddr: "127.0.0.1:" + internalPort, Out: &banner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)

	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "LANG=C.UTF-8", "TMPDIR=" + work,
		"PUBLIC_PORT=" + publicPort, "INTERNAL_PORT=" + internalPort}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			runWalkthrough(t, bash, work, env, name, steps[name])
		})
	}
}

// blockMark separates the steps' outputs.
const blockMark = "::readme-walkthrough-step "

// runWalkthrough runs the steps in one bash and checks each one's output.
func runWalkthrough(t *testing.T, bash, dir string, env []string, name string, steps []walkthroughStep) {
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, st := range steps {
		fmt.Fprintf(&script, "printf '\\n%s%d\\n'; printf '\\n%s%d\\n' >&2\n%s\n", blockMark, i, blockMark, i, st.script)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", script.String())
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	outs, errs := splitWalkthroughSteps(stdout.String()), splitWalkthroughSteps(stderr.String())
	show := func(i int) string {
		return fmt.Sprintf("README.md:%d, walkthrough %q step %d:\n%s\n--- stdout:\n%s\n--- stderr:\n%s",
			steps[i].line, name, i+1, steps[i].script, outs[i], errs[i])
	}
	for i, st := range steps {
		if _, ran := outs[i]; !ran {
			break
		}
		if st.want != nil && !walkthroughMatch(st.want, strings.Split(outs[i], "\n")) {
			t.Errorf("the output differs from the README's:\n%s\n--- the README says:\n%s", show(i), strings.Join(st.want, "\n"))
		}
	}
	if runErr != nil {
		last := len(outs) - 1
		if last < 0 {
			t.Fatalf("walkthrough %q: %v\n%s", name, runErr, stderr.String())
		}
		t.Fatalf("a step failed (%v):\n%s", runErr, show(last))
	}
	if len(outs) != len(steps) {
		t.Fatalf("walkthrough %q ran %d of its %d steps", name, len(outs), len(steps))
	}
}

// splitWalkthroughSteps cuts a stream at the step marks: step number → its text.
func splitWalkthroughSteps(s string) map[int]string {
	out := map[int]string{}
	parts := strings.Split(s, "\n"+blockMark)
	for _, p := range parts[1:] {
		num, text, _ := strings.Cut(p, "\n")
		n, err := strconv.Atoi(num)
		if err != nil {
			continue
		}
		out[n] = strings.TrimRight(text, "\n")
	}
	return out
}

// walkthroughPorts are n distinct loopback ports nobody listens on right
// now.
func walkthroughPorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		_, p, _ := net.SplitHostPort(l.Addr().String())
		ports = append(ports, p)
	}
	return ports
}
