package jsonstr

import (
	"encoding/json"
	"testing"
)

func TestAppend(t *testing.T) {
	for in, want := range map[string]string{
		"":               `""`,
		`a"b\c`:          `"a\"b\\c"`,
		"\x00\n\t\x1f":   `"\u0000\u000a\u0009\u001f"`,
		"São <&> \u2028": "\"São <&> \u2028\"",
		"\x7f":           "\"\x7f\"",
	} {
		got := string(Append([]byte("x"), in))
		if got != "x"+want {
			t.Errorf("Append(%q) = %s, want %s", in, got[1:], want)
		}
		var back string
		if err := json.Unmarshal([]byte(got[1:]), &back); err != nil || back != in {
			t.Errorf("Append(%q) reads back as %q (%v)", in, back, err)
		}
	}
}
