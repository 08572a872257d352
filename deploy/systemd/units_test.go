// Package systemd holds the unit files for running bcpd on virtual
// machines and the test that checks them against bcpd and systemd.
package systemd

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bcpdev/bcp/deploy/internal/bcpdhelp"
)

// The roles run as bcpd@<role>; the sealing roles get the master key.
var (
	roles          = []string{"edge", "tenants", "catalog", "pricing", "checkout", "payments", "orders"}
	masterKeyRoles = []string{"tenants", "payments"}
	services       = []string{"bcpd@.service", "bcpd-migrate.service"}
	hardening      = []string{"NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes", "DynamicUser=yes", "CapabilityBoundingSet="}
)

const bin = "/usr/local/bin/bcpd"

// directives lists a unit file's Key=Value lines (comments and sections
// dropped; systemd's line continuations are not used here).
func directives(text string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, ";") && !strings.HasPrefix(l, "[") {
			out = append(out, l)
		}
	}
	return out
}

func values(ds []string, key string) []string {
	var out []string
	for _, d := range ds {
		if v, ok := strings.CutPrefix(d, key+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

// problems checks the unit files and example environment files (path
// relative to deploy/systemd → content).
func problems(files map[string]string) []string {
	var out []string
	fail := func(f string, a ...string) { out = append(out, f+": "+strings.Join(a, " ")) }
	env := func(file, name, value string, literalOK bool) {
		cl, err := bcpdhelp.Of("edge")
		if err != nil {
			fail(file, err.Error())
			return
		}
		switch {
		case strings.HasPrefix(name, "BCP_") && !cl.Env[name]:
			fail(file, name, "is not a variable of bcpd")
		case bcpdhelp.SecretVar(name) && value != "" && !literalOK:
			fail(file, name, "is a secret: leave it empty in the example, set it on the host")
		case bcpdhelp.URLPassword.MatchString(value):
			fail(file, name, "holds a URL with a password")
		}
	}
	for _, name := range services {
		ds := directives(files[name])
		if len(ds) == 0 {
			fail(name, "missing")
			continue
		}
		for _, h := range hardening {
			if !slices.Contains(ds, h) {
				fail(name, "lacks", h)
			}
		}
		if len(values(ds, "EnvironmentFile")) == 0 {
			fail(name, "reads no EnvironmentFile: where would its secrets come from?")
		}
		if name == "bcpd@.service" && !slices.Contains(ds, "Restart=on-failure") {
			fail(name, "lacks Restart=on-failure")
		}
		for _, e := range values(ds, "Environment") {
			k, v, _ := strings.Cut(e, "=")
			env(name, k, v, false)
		}
		for _, cmd := range values(ds, "ExecStart") {
			words := strings.Fields(cmd)
			if len(words) < 2 || words[0] != bin {
				fail(name, "ExecStart", cmd, "does not run", bin)
				continue
			}
			var role []string
			for _, w := range words[1:] {
				if strings.HasPrefix(w, "-") {
					break
				}
				role = append(role, w)
			}
			if slices.Equal(role, []string{"%i"}) {
				role = []string{"checkout"} // the flags are the same for every role
			}
			cl, err := bcpdhelp.Of(role...)
			if err != nil {
				fail(name, err.Error())
				continue
			}
			for _, w := range words[1+len(role):] {
				flag, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
				if !cl.Flags[flag] {
					fail(name, "--"+flag, "is not a flag of bcpd", strings.Join(role, " "))
				}
				if bcpdhelp.SecretVar(bcpdhelp.FlagVar(flag)) {
					fail(name, "--"+flag, "puts a secret on the command line (ps shows it)")
				}
			}
		}
	}
	for _, role := range masterKeyRoles {
		name := "bcpd@" + role + ".service.d/master-key.conf"
		ds := directives(files[name])
		if len(values(ds, "LoadCredential")) == 0 || !slices.Contains(values(ds, "Environment"), "BCP_MASTER_KEY_FILE=%d/master-key") {
			fail(name, "does not hand bcpd", role, "the master key as a credential")
		}
		for _, e := range values(ds, "Environment") {
			k, v, _ := strings.Cut(e, "=")
			env(name, k, v, false)
		}
	}
	for name, text := range files {
		if !strings.HasSuffix(name, ".env.example") {
			continue
		}
		for _, d := range directives(text) {
			k, v, ok := strings.Cut(d, "=")
			if !ok {
				fail(name, "line", d, "is not NAME=value")
				continue
			}
			env(name, k, v, false)
		}
	}
	slices.Sort(out)
	return out
}

func readTree(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".go") {
			return err
		}
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(p)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestUnits(t *testing.T) {
	for _, p := range problems(readTree(t)) {
		t.Error(p)
	}
}

func TestChecksFail(t *testing.T) {
	cases := []struct{ name, file, old, new, want string }{
		{"no NoNewPrivileges", "bcpd@.service", "NoNewPrivileges=yes\n", "", "lacks NoNewPrivileges=yes"},
		{"no restart", "bcpd@.service", "Restart=on-failure", "Restart=no", "lacks Restart=on-failure"},
		{"flag bcpd lacks", "bcpd@.service", "ExecStart=/usr/local/bin/bcpd %i", "ExecStart=/usr/local/bin/bcpd %i --internal-adress=:1", "--internal-adress is not a flag"},
		{"secret flag", "bcpd-migrate.service", "bcpd migrate up", "bcpd migrate up --owner-database-url=x", "puts a secret on the command line"},
		{"variable bcpd lacks", "bcpd.env.example", "BCP_LOG_LEVEL=info", "BCP_LOGLEVEL=info", "BCP_LOGLEVEL is not a variable"},
		{"secret in the example", "bcpd.env.example", "BCP_INTERNAL_TOKEN=\n", "BCP_INTERNAL_TOKEN=0123abcd\n", "BCP_INTERNAL_TOKEN is a secret"},
		{"inline secret", "bcpd@.service", "Type=exec\n", "Type=exec\nEnvironment=BCP_OPERATOR_TOKEN=abc\n", "BCP_OPERATOR_TOKEN is a secret"},
		{"URL with a password", "bcpd.env.example", "BCP_TENANTS_URL=http://10.0.1.10:9091", "BCP_TENANTS_URL=http://u:p@10.0.1.10:9091", "URL with a password"},
		{"no master key", "bcpd@payments.service.d/master-key.conf", "Environment=BCP_MASTER_KEY_FILE=%d/master-key\n", "", "does not hand bcpd payments the master key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := readTree(t)
			if !strings.Contains(files[tc.file], tc.old) {
				t.Fatalf("%s has no %q: the case no longer breaks anything", tc.file, tc.old)
			}
			files[tc.file] = strings.Replace(files[tc.file], tc.old, tc.new, 1)
			got := problems(files)
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("no problem mentions %q; got:\n%s", tc.want, strings.Join(got, "\n"))
			}
		})
	}
}

// verify runs systemd-analyze verify on every role's instance, the
// migration and the target, with ExecStart pointing at a fresh bcpd (verify
// insists the binary exists). Any message, warnings included, fails.
func verify(t *testing.T, files map[string]string) string {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd): unit syntax not verified")
	}
	bcpd, err := bcpdhelp.Binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, bin, bcpd)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"verify", "--man=no"}
	for name, text := range files {
		if !strings.HasSuffix(name, ".env.example") {
			write(name, text)
		}
	}
	for _, role := range roles {
		write("bcpd@"+role+".service", files["bcpd@.service"])
		args = append(args, filepath.Join(dir, "bcpd@"+role+".service"))
	}
	args = append(args, filepath.Join(dir, "bcpd-migrate.service"), filepath.Join(dir, "bcpd.target"))
	out, err := exec.Command(analyze, args...).CombinedOutput()
	if err != nil && len(out) == 0 {
		return err.Error()
	}
	return strings.TrimSpace(string(out))
}

func TestSystemdAnalyzeVerify(t *testing.T) {
	if out := verify(t, readTree(t)); out != "" {
		t.Errorf("systemd-analyze verify:\n%s", out)
	}
	// And it does catch a bad unit.
	files := readTree(t)
	files["bcpd@.service"] = strings.Replace(files["bcpd@.service"], "ProtectSystem=strict", "ProtectSystem=strictest", 1)
	if out := verify(t, files); !strings.Contains(out, "ProtectSystem") && !strings.Contains(out, "protect system") {
		t.Errorf("systemd-analyze verify accepted ProtectSystem=strictest: %q", out)
	}
}
