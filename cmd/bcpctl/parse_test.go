package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseArguments(t *testing.T) {
	// A thumbprint kid that starts with "-", as `keys list` prints it.
	const kid = "-a3aYY7Rh0w8D_zP-wDy5FXeQAJOP54zEgo3NKESRSw"
	type result struct {
		pos   string
		force bool
		delay time.Duration
	}
	cases := []struct {
		args    []string
		want    result
		wantErr string
	}{
		{args: []string{"loja", kid}, want: result{pos: "loja|" + kid}},
		{args: []string{"loja", kid, "--force"}, want: result{pos: "loja|" + kid, force: true}},
		{args: []string{"--force", "loja", kid}, want: result{pos: "loja|" + kid, force: true}},
		{args: []string{"loja", "--delay", "5s", kid}, want: result{pos: "loja|" + kid, delay: 5 * time.Second}},
		{args: []string{"loja", "--delay=-1s", kid}, want: result{pos: "loja|" + kid, delay: -time.Second}},
		// A flag's value may itself start with "-".
		{args: []string{"loja", "-delay", "-2s", "k"}, want: result{pos: "loja|k", delay: -2 * time.Second}},
		// After "--" even a defined flag's name is an argument.
		{args: []string{"--force", "--", "loja", "--force"}, want: result{pos: "loja|--force", force: true}},
		{args: []string{"loja", "--forse", "k"}, wantErr: `keys revoke expects 2 argument(s) <tenant> <kid>, got 3 (--forse is not one of its flags)`},
		{args: []string{"loja"}, wantErr: `keys revoke expects 2 argument(s) <tenant> <kid>, got 1`},
		{args: []string{"loja", "k", "--delay", "soon"}, wantErr: `keys revoke: invalid value "soon" for flag -delay`},
		{args: []string{"loja", "k", "--delay"}, wantErr: `keys revoke: flag needs an argument: -delay`},
		{args: []string{"loja", "k", "--force=maybe"}, wantErr: `keys revoke: invalid boolean value "maybe" for -force`},
		{args: []string{"-h"}, wantErr: `keys revoke: flag: help requested`},
	}
	for _, c := range cases {
		fs := newFS("keys revoke")
		force := fs.Bool("force", false, "")
		delay := fs.Duration("delay", 0, "")
		pos, err := parse(fs, c.args, 2, "<tenant> <kid>")
		if c.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
				t.Errorf("parse %q: error %v, want prefix %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parse %q: %v", c.args, err)
			continue
		}
		got := result{pos: strings.Join(pos, "|"), force: *force, delay: *delay}
		if got != c.want {
			t.Errorf("parse %q = %+v, want %+v", c.args, got, c.want)
		}
	}
}
