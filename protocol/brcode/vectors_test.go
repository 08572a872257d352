package brcode

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// vectorsPath is the package's own copy of the shared vectors, so tests do
// not depend on anything outside the module; TestVectorsCopyIsCurrent keeps
// it honest when the shared file is around.
const (
	vectorsPath = "testdata/brcode-vectors.json"
	sharedPath  = "../../../../../shared/reference/test-vectors/brcode-vectors.json"
)

type vectorFile struct {
	CRCCheck []struct {
		InputASCII string `json:"input_ascii"`
		CRC        string `json:"crc"`
	} `json:"crc_check"`
	Valid []struct {
		ID         string            `json:"id"`
		Kind       string            `json:"kind"`
		Payload    string            `json:"payload"`
		CRC        string            `json:"crc"`
		Valid      bool              `json:"valid"`
		CharLength int               `json:"char_length"`
		UTF8Length int               `json:"utf8_length"`
		Fields     []json.RawMessage `json:"fields"`
	} `json:"valid"`
	InvalidReported []struct {
		ID        string  `json:"id"`
		Payload   *string `json:"payload"`
		StatedCRC string  `json:"stated_crc"`
	} `json:"invalid_reported"`
	InvalidDerived []struct {
		ID             string  `json:"id"`
		DerivedFrom    string  `json:"derived_from"`
		Payload        string  `json:"payload"`
		Valid          bool    `json:"valid"`
		CRCField       *string `json:"crc_field"`
		CRCMatchesBody bool    `json:"crc_matches_body"`
		Violates       string  `json:"violates"`
	} `json:"invalid_derived"`
}

func loadVectors(tb testing.TB) *vectorFile {
	tb.Helper()
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		tb.Fatal(err)
	}
	var v vectorFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&v); err != nil {
		tb.Fatal(err)
	}
	if len(v.Valid) == 0 || len(v.InvalidDerived) == 0 || len(v.CRCCheck) == 0 {
		tb.Fatal("vector file has empty sections")
	}
	return &v
}

// node is a field of the vectors' "fields" lists: [id, "value"] or
// [id, [[subid, "value"], ...]] for templates.
type node struct {
	ID    string
	Value string
	Sub   []node
}

func decodeNodes(t *testing.T, raws []json.RawMessage) []node {
	t.Helper()
	var out []node
	for _, r := range raws {
		var pair []json.RawMessage
		if err := json.Unmarshal(r, &pair); err != nil || len(pair) != 2 {
			t.Fatalf("bad field %s", r)
		}
		var n node
		if err := json.Unmarshal(pair[0], &n.ID); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(pair[1], &n.Value); err != nil {
			var sub []json.RawMessage
			if err := json.Unmarshal(pair[1], &sub); err != nil {
				t.Fatalf("field %s: %s", n.ID, pair[1])
			}
			n.Sub = decodeNodes(t, sub)
		}
		out = append(out, n)
	}
	return out
}

// tlvTree decodes s with DecodeTLV, descending into templates.
func tlvTree(t *testing.T, s string, nested bool) []node {
	t.Helper()
	fs, err := DecodeTLV(s)
	if err != nil {
		t.Fatalf("DecodeTLV: %v", err)
	}
	var out []node
	for _, f := range fs {
		if nested && IsTemplate(f.ID) {
			out = append(out, node{ID: f.ID, Sub: tlvTree(t, f.Value, false)})
		} else {
			out = append(out, node{ID: f.ID, Value: f.Value})
		}
	}
	return out
}

func TestVectorsCopyIsCurrent(t *testing.T) {
	shared, err := os.ReadFile(filepath.FromSlash(sharedPath))
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("shared reference not present; testing the testdata copy only")
	}
	if err != nil {
		t.Fatal(err)
	}
	local, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shared, local) {
		t.Fatalf("%s differs from %s: copy the shared file again", vectorsPath, sharedPath)
	}
}

func TestVectorCRCCheck(t *testing.T) {
	for _, c := range loadVectors(t).CRCCheck {
		want, err := strconv.ParseUint(c.CRC, 16, 16)
		if err != nil {
			t.Fatal(err)
		}
		if got := CRC16([]byte(c.InputASCII)); got != uint16(want) {
			t.Errorf("CRC16(%q) = %04X, want %s", c.InputASCII, got, c.CRC)
		}
		if got := Checksum(c.InputASCII); got != c.CRC {
			t.Errorf("Checksum(%q) = %s, want %s", c.InputASCII, got, c.CRC)
		}
	}
}

func TestValidVectors(t *testing.T) {
	for _, v := range loadVectors(t).Valid {
		t.Run(v.ID, func(t *testing.T) {
			if !v.Valid {
				t.Fatal("vector in the valid section is marked invalid")
			}
			if n := utf8.RuneCountInString(v.Payload); n != v.CharLength {
				t.Errorf("char length %d, vector says %d", n, v.CharLength)
			}
			if n := len(v.Payload); n != v.UTF8Length {
				t.Errorf("UTF-8 length %d, vector says %d", n, v.UTF8Length)
			}
			body := v.Payload[:len(v.Payload)-4]
			if got := Checksum(body); got != v.CRC || !strings.HasSuffix(v.Payload, "6304"+v.CRC) {
				t.Errorf("Checksum = %s, want %s", got, v.CRC)
			}

			want := decodeNodes(t, v.Fields)
			if got := tlvTree(t, v.Payload, true); !reflect.DeepEqual(got, want) {
				t.Errorf("TLV tree mismatch\n got %+v\nwant %+v", got, want)
			}

			p, err := Parse(v.Payload)
			if v.Kind == "emvco" {
				// Generic EMV, not Pix: structure and CRC are fine, the Pix
				// rules must reject it.
				if err == nil {
					t.Fatal("Parse accepted a non-Pix EMV payload")
				}
				if errors.Is(err, ErrChecksum) || errors.Is(err, ErrSyntax) || errors.Is(err, ErrTruncated) {
					t.Fatalf("rejected for the wrong reason: %v", err)
				}
				if !errors.Is(err, ErrUnsupported) {
					t.Errorf("want ErrUnsupported, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got, wantDyn := p.IsDynamic(), v.Kind == "dynamic"; got != wantDyn {
				t.Errorf("IsDynamic = %v, kind %s", got, v.Kind)
			}
			if s, err := p.Encode(); err != nil || s != v.Payload {
				t.Errorf("Encode(Parse(v)) = %q, %v\nwant %q", s, err, v.Payload)
			}
			// Build the payload independently from the vector's field list
			// and check the encoder reproduces the vector byte for byte.
			q := payloadFromNodes(t, want)
			if !reflect.DeepEqual(q, *p) {
				t.Errorf("Parse mismatch\n got %+v\nwant %+v", *p, q)
			}
			if s, err := q.Encode(); err != nil || s != v.Payload {
				t.Errorf("Encode(fields) = %q, %v\nwant %q", s, err, v.Payload)
			}
		})
	}
}

// payloadFromNodes maps a vector's field list onto a Payload without using
// the package's parser.
func payloadFromNodes(t *testing.T, ns []node) Payload {
	t.Helper()
	var p Payload
	for _, n := range ns {
		switch n.ID {
		case "00", "53", "58", "63":
		case "01":
			v, _ := strconv.Atoi(n.Value)
			p.Initiation = Initiation(v)
		case "26":
			for _, s := range n.Sub {
				switch s.ID {
				case "00":
					p.GUI = s.Value
				case "01":
					p.Key = s.Value
				case "02":
					p.Info = s.Value
				case "25":
					p.URL = s.Value
				default:
					t.Fatalf("unexpected 26-%s", s.ID)
				}
			}
		case "52":
			p.MCC = n.Value
		case "54":
			c, err := strconv.ParseInt(strings.Replace(n.Value, ".", "", 1), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			p.Amount = c
		case "59":
			p.MerchantName = n.Value
		case "60":
			p.MerchantCity = n.Value
		case "62":
			for _, s := range n.Sub {
				if s.ID == "05" && s.Value != "***" {
					p.TxID = s.Value
				} else if s.ID != "05" {
					p.AdditionalData = append(p.AdditionalData, Field{s.ID, s.Value})
				}
			}
		default:
			t.Fatalf("unexpected field %s", n.ID)
		}
	}
	return p
}

// wantDerived says why each derived negative vector must fail. A vector
// added to the shared file without an entry here fails the test, so new
// rules get an explicit expectation.
var wantDerived = map[string]struct {
	kind   error
	field  string
	detail string // substring of the message, when the field alone is not telling
}{
	"crc_mismatch":            {ErrChecksum, "63", "computed 1D3D"},
	"truncated_crc":           {ErrTruncated, "63", ""},
	"missing_crc_field":       {ErrMissing, "63", ""},
	"tlv_length_mismatch":     {ErrSyntax, "00", "after field 59"},
	"merchant_name_too_long":  {ErrLength, "59", "26 characters"},
	"merchant_city_too_long":  {ErrLength, "60", "19 characters"},
	"missing_additional_data": {ErrMissing, "62", ""},
	"dynamic_url_with_scheme": {ErrInvalid, "26-25", "scheme"},
	"static_txid_too_long":    {ErrTxID, "62-05", "26 characters"},
	"amount_decimal_comma":    {ErrAmount, "54", ""},
	"key_and_url_together":    {ErrConflict, "26", ""},
}

func TestInvalidDerivedVectors(t *testing.T) {
	for _, v := range loadVectors(t).InvalidDerived {
		t.Run(v.ID, func(t *testing.T) {
			want, ok := wantDerived[v.ID]
			if !ok {
				t.Fatalf("no expectation for new vector %q (%s)", v.ID, v.Violates)
			}
			if v.Valid {
				t.Fatal("derived negative marked valid")
			}
			if v.CRCMatchesBody {
				body := v.Payload[:len(v.Payload)-4]
				if Checksum(body) != *v.CRCField || !strings.HasSuffix(body, "6304") {
					t.Fatalf("vector says its CRC matches, but Checksum = %s", Checksum(body))
				}
			}
			p, err := Parse(v.Payload)
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", p)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
			if v.CRCMatchesBody && errors.Is(err, ErrChecksum) {
				t.Fatalf("CRC is correct, want a structural rejection: %v", err)
			}
			if !errors.Is(err, want.kind) || e.Field != want.field || !strings.Contains(err.Error(), want.detail) {
				t.Fatalf("got %v (field %q), want %v on field %s mentioning %q", err, e.Field, want.kind, want.field, want.detail)
			}
			t.Log(err)
		})
	}
}

// The reported-bad examples carry only fragments. Should the file one day
// record full payloads, they must be rejected too.
func TestInvalidReportedVectors(t *testing.T) {
	for _, v := range loadVectors(t).InvalidReported {
		if v.Payload == nil {
			continue
		}
		if _, err := Parse(*v.Payload); err == nil {
			t.Errorf("%s: Parse accepted a known-bad payload", v.ID)
		}
	}
}
