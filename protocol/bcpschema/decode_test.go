package bcpschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// decodeStd is decodeJSON without its fast path: encoding/json's Decoder
// with json.Number.
func decodeStd(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid data after top-level JSON value")
	}
	return v, nil
}

// decodeCases are documents whose every corner the fast path must decode
// exactly as encoding/json does, or leave to it.
var decodeCases = []string{
	`{}`, `[]`, ` {} `, "\t\r\n{\"a\":1}\n", `null`, `true`, `false`, `0`, `-0`, `12`, `-12.5e+3`, `1E9`, `1.0`,
	`9007199254740993`, `123456789012345678901234567890`, `"x"`, `""`,
	`{"a":{"b":[1,2,{"c":null}]},"d":[],"e":{}}`,
	`{"a":1,"a":2}`, `{"a":{"x":1},"a":[1]}`,
	`{"s":"caf\u00e9 \ud83d\uded2 \" \\ \/ \b\f\n\r\t"}`,
	`{"s":"ação 🛒 <b>&amp;</b> \u2028\u2029"}`,
	`{"s":"\u0000"}`, `{"s":"\ud800"}`, `{"s":"\udc00\ud800"}`,
	"{\"s\":\"\xff\xfe\"}", "{\"s\":\"a\xc3\"}", "{\"\xff\":1}",
	"{\"s\":\"tab\there\"}", "{\"s\":\"nl\nhere\"}", "{\"s\":\"\x7f\"}",
	`{"s":"\x"}`, `{"s":"\u12"}`, `{"s":"abc`, `{"s":"abc\`, `{"s":"abc\"}`,
	`{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":1e+}`, `{"a":+1}`, `{"a":0x10}`, `{"a":1.5E-7}`,
	`{"a":tru}`, `{"a":nul}`, `{"a":falsey}`, `{"a":NaN}`,
	`{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{a:1}`, `{'a':1}`, `{"a":1}}`, `[1]]`, `[1`, `{"a":[1}`,
	`{"a":1} x`, `{} {}`, `1 2`, ``, ` `, `"`, `[`, `{`, `]`, `}`,
	strings.Repeat("[", 1200) + strings.Repeat("]", 1200),
	strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40),
}

// The fast path decodes what encoding/json decodes, to the same values, and
// gives up (returning to encoding/json) on nothing it should accept.
func TestDecodeFastMatchesEncodingJSON(t *testing.T) {
	docs := append([]string(nil), decodeCases...)
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	fast := 0
	for _, doc := range docs {
		compareDecode(t, []byte(doc))
		if _, ok := decodeFast([]byte(doc)); ok {
			fast++
		}
	}
	// Every test data file is plain JSON: the fast path takes each.
	if fast < len(files) {
		t.Fatalf("the fast path took %d of %d documents, want at least the %d files", fast, len(docs), len(files))
	}
}

func compareDecode(t *testing.T, doc []byte) {
	t.Helper()
	want, wantErr := decodeStd(doc)
	got, ok := decodeFast(doc)
	if ok {
		if wantErr != nil {
			t.Fatalf("%.60q: the fast path decoded what encoding/json refuses (%v)", doc, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%.60q: fast path %#v, encoding/json %#v", doc, got, want)
		}
	}
	// And decodeJSON, fast or not, answers as encoding/json.
	got, err := decodeJSON(doc)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%.60q: decodeJSON (%#v, %v), encoding/json (%#v, %v)", doc, got, err, want, wantErr)
	}
	if wantErr == nil && !ok && json.Valid(doc) && !bytes.ContainsAny(doc, "\xff\xfe\xc3") && len(doc) < 2000 {
		t.Fatalf("%.60q: valid UTF-8 JSON left to encoding/json", doc)
	}
}

func FuzzDecodeFast(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		want, wantErr := decodeStd(doc)
		got, ok := decodeFast(doc)
		if !ok {
			return
		}
		if wantErr != nil {
			t.Fatalf("%q: the fast path decoded what encoding/json refuses (%v)", doc, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast path %#v, encoding/json %#v", doc, got, want)
		}
	})
}
