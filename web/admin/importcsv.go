package admin

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
)

// Catalog import from a CSV file: the format of `bcpctl catalog import`
// (one row per variant, the same columns and value rules), applied all or
// nothing by the catalog's ImportProducts. Every problem is listed by
// line and column; when there is one, nothing changes.

const maxImportBytes = 2 << 20

// importColumns are the CSV columns, all required (an import replaces each
// listed product, so a missing column would silently clear values).
var importColumns = []string{"product_id", "product_title", "description", "image_url", "sku", "variant_title", "price", "stock", "active"}

const sampleCSV = "product_id,product_title,description,image_url,sku,variant_title,price,stock,active\r\n" +
	"prd_bone,Boné,Boné de algodão com aba curva,https://exemplo.com.br/bone.jpg,BONE-AZ,Boné azul,\"49,90\",10,sim\r\n" +
	"prd_bone,,,,BONE-VD,Boné verde,\"49,90\",5,sim\r\n" +
	",Caneca 500 ml,,,CAN-500,,3990,0,não\r\n"

type importProblem struct {
	Line   int
	Column string
	Msg    string
	order  int
}

type importData struct {
	FileName                    string
	Problems                    []importProblem
	FileErr                     string
	Done                        bool
	Created, Updated, Unchanged int32
	Columns                     []string
	MaxMB                       int
}

func (a *Admin) importPage(rw http.ResponseWriter, r *http.Request) {
	a.render(rw, r, http.StatusOK, "import", a.newPage(r, "Importar produtos", "produtos", importData{Columns: importColumns, MaxMB: maxImportBytes >> 20}))
}

func (a *Admin) importSample(rw http.ResponseWriter, r *http.Request) {
	rw.Header().Set("Content-Type", "text/csv; charset=utf-8")
	rw.Header().Set("Content-Disposition", `attachment; filename="produtos-exemplo.csv"`)
	_, _ = io.WriteString(rw, sampleCSV)
}

// uploadCSRF is checkCSRF for the multipart upload, with its own size
// limit: a file too large is reported on the page (no state changes, so
// the token is not needed for that answer).
func (a *Admin) uploadCSRF(h http.HandlerFunc) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(rw, r.Body, maxImportBytes+64<<10)
		err := r.ParseMultipartForm(maxImportBytes)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			d := importData{Columns: importColumns, MaxMB: maxImportBytes >> 20, FileErr: fmt.Sprintf("Arquivo grande demais: o limite é %d MB.", maxImportBytes>>20)}
			a.render(rw, r, http.StatusRequestEntityTooLarge, "import", a.newPage(r, "Importar produtos", "produtos", d))
			return
		}
		s := sessionFrom(r.Context())
		if err != nil || s == nil || !hmac.Equal([]byte(r.PostFormValue("_csrf")), []byte(a.csrfToken(s))) {
			a.errorPage(rw, r, http.StatusForbidden)
			return
		}
		h(rw, r)
	}
}

func (a *Admin) importCSV(rw http.ResponseWriter, r *http.Request) {
	d := importData{Columns: importColumns, MaxMB: maxImportBytes >> 20}
	fail := func(status int) {
		a.render(rw, r, status, "import", a.newPage(r, "Importar produtos", "produtos", d))
	}
	file, hdr, err := r.FormFile("file")
	if err != nil {
		d.FileErr = "Escolha um arquivo CSV."
		fail(http.StatusUnprocessableEntity)
		return
	}
	defer file.Close()
	d.FileName = hdr.Filename
	body, err := io.ReadAll(io.LimitReader(file, maxImportBytes+1))
	if err != nil || len(body) > maxImportBytes {
		d.FileErr = fmt.Sprintf("Arquivo grande demais: o limite é %d MB.", maxImportBytes>>20)
		fail(http.StatusRequestEntityTooLarge)
		return
	}
	in := parseImportCSV(body)
	if in.fatal != nil {
		d.Problems = in.fatal
		fail(http.StatusUnprocessableEntity)
		return
	}
	// With local errors the file is still checked by the catalog, as a dry
	// run, so every problem shows at once.
	resp, err := a.opts.Catalog.ImportProducts(r.Context(), connect.NewRequest(&catalogv1.ImportProductsRequest{Products: in.products, DryRun: len(in.local) > 0}))
	if err != nil && len(in.local) == 0 {
		a.serviceError(rw, r, err)
		return
	}
	d.Problems = in.local
	if err == nil {
		for _, e := range resp.Msg.GetErrors() {
			d.Problems = append(d.Problems, in.locate(e))
		}
	}
	if len(d.Problems) > 0 {
		slices.SortStableFunc(d.Problems, func(x, y importProblem) int {
			return cmp.Or(cmp.Compare(x.Line, y.Line), cmp.Compare(x.order, y.order))
		})
		fail(http.StatusUnprocessableEntity)
		return
	}
	s := sessionFrom(r.Context())
	d.Done, d.Created, d.Updated, d.Unchanged = true, resp.Msg.GetCreated(), resp.Msg.GetUpdated(), resp.Msg.GetUnchanged()
	a.log.InfoContext(r.Context(), "admin: catalog imported", "tenant_id", s.tenant, "by", s.user.GetId(), "created", d.Created, "updated", d.Updated)
	a.render(rw, r, http.StatusOK, "import", a.newPage(r, "Importar produtos", "produtos", d))
}

// importInput is a CSV read into products, with the line of each product's
// first row and of each variant's row to point back at the file.
type importInput struct {
	products    []*catalogv1.Product
	fatal       []importProblem
	local       []importProblem
	productLine []int
	variantLine [][]int
}

var (
	importPathRE = regexp.MustCompile(`^products\[(\d+)\](?:\.variants\[(\d+)\])?(?:\.([a-z_]+))?$`)
	productCol   = map[string]string{"id": "product_id", "title": "product_title", "description": "description", "image_url": "image_url", "variants": "sku"}
	variantCol   = map[string]string{"id": "sku", "sku": "sku", "title": "variant_title", "price": "price", "currency": "price", "stock": "stock", "active": "active", "image_url": "image_url"}
	// The catalog's codes in Portuguese; other codes keep its message.
	importCodePT = map[string]string{
		"invalid_id":           "Id inválido: até 64 letras, números ou . _ : -.",
		"duplicate_product":    "Produto repetido no arquivo.",
		"invalid_title":        "Nome obrigatório, sem caracteres de controle.",
		"invalid_description":  "Descrição longa demais.",
		"invalid_url":          "Use um endereço http(s) completo.",
		"variant_required":     "O produto precisa de ao menos uma variante.",
		"duplicate_variant":    "Variante repetida.",
		"invalid_sku":          "SKU obrigatório.",
		"duplicate_sku":        "SKU repetido no arquivo.",
		"invalid_price":        "O preço não pode ser negativo.",
		"unsupported_currency": "Só há preços em reais (BRL).",
		"invalid_stock":        "O estoque não pode ser negativo.",
		"sku_taken":            "Este SKU já pertence a outro produto do catálogo.",
		"too_many_errors":      "Há mais erros além destes.",
	}
)

func (in *importInput) locate(e *catalogv1.ImportError) importProblem {
	msg := importCodePT[e.GetCode()]
	if msg == "" {
		msg = e.GetMessage()
	}
	m := importPathRE.FindStringSubmatch(e.GetPath())
	if m == nil {
		return importProblem{Msg: msg}
	}
	i, _ := strconv.Atoi(m[1])
	if i >= len(in.productLine) {
		return importProblem{Msg: msg}
	}
	line, col := in.productLine[i], productCol[m[3]]
	if m[2] != "" {
		j, _ := strconv.Atoi(m[2])
		if j >= len(in.variantLine[i]) {
			return importProblem{Line: line, Msg: msg}
		}
		line, col = in.variantLine[i][j], variantCol[m[3]]
	}
	return importProblem{Line: line, Column: col, Msg: msg, order: slices.Index(importColumns, col)}
}

// parseImportCSV reads one row per variant. Rows sharing a product_id form
// one product whose fields come from its first row; a row with an empty
// product_id is a product of its own. An empty variant_title is the
// product_title, an empty active is true. Values that do not parse are
// reported and replaced by harmless ones so the catalog can still check
// the rest of the file.
func parseImportCSV(b []byte) *importInput {
	in := &importInput{}
	b = bytes.TrimPrefix(b, []byte("\ufeff")) // spreadsheet exports start with a BOM
	rd := csv.NewReader(bytes.NewReader(b))
	rd.FieldsPerRecord = -1
	// Spreadsheets in Brazil export with ';' because ',' is the decimal mark.
	if first, _, _ := bytes.Cut(b, []byte("\n")); bytes.Count(first, []byte(";")) > bytes.Count(first, []byte(",")) {
		rd.Comma = ';'
	}
	header, err := rd.Read()
	if err != nil {
		in.fatal = []importProblem{{Line: 1, Msg: "O arquivo precisa de uma linha de cabeçalho: " + strings.Join(importColumns, ",")}}
		return in
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		switch {
		case !slices.Contains(importColumns, h):
			in.fatal = append(in.fatal, importProblem{Line: 1, Column: h, Msg: "Coluna desconhecida."})
		case col[h] != 0:
			in.fatal = append(in.fatal, importProblem{Line: 1, Column: h, Msg: "Coluna repetida."})
		default:
			col[h] = i + 1
		}
	}
	for _, c := range importColumns {
		if col[c] == 0 {
			in.fatal = append(in.fatal, importProblem{Line: 1, Column: c, Msg: "Coluna obrigatória ausente."})
		}
	}
	if in.fatal != nil {
		return in
	}
	byID := map[string]int{}
	for {
		rec, err := rd.Read()
		if err == io.EOF {
			break
		}
		line, _ := rd.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.Line
			}
			// A broken quote can swallow the rest of the file: stop here.
			in.local = append(in.local, importProblem{Line: line, Msg: "CSV malformado (aspas não fechadas ou fora de lugar)."})
			break
		}
		if len(rec) != len(header) {
			in.local = append(in.local, importProblem{Line: line, Msg: fmt.Sprintf("Esperados %d campos, há %d.", len(header), len(rec))})
			continue
		}
		if strings.TrimSpace(strings.Join(rec, "")) == "" {
			continue // a row of empty cells, as spreadsheets write
		}
		get := func(c string) string { return strings.TrimSpace(rec[col[c]-1]) }
		bad := func(c, msg string) {
			in.local = append(in.local, importProblem{Line: line, Column: c, Msg: msg, order: slices.Index(importColumns, c)})
		}
		pid := get("product_id")
		i, seen := byID[pid]
		if !seen || pid == "" {
			i = len(in.products)
			if pid != "" {
				byID[pid] = i
			}
			in.products = append(in.products, &catalogv1.Product{Id: pid, Title: get("product_title"), Description: get("description"), ImageUrl: get("image_url"), Active: true})
			in.productLine = append(in.productLine, line)
			in.variantLine = append(in.variantLine, nil)
		} else {
			p := in.products[i]
			for _, c := range []struct{ col, have string }{{"product_title", p.GetTitle()}, {"description", p.GetDescription()}, {"image_url", p.GetImageUrl()}} {
				if got := get(c.col); got != "" && got != c.have {
					bad(c.col, fmt.Sprintf("Diferente da linha %d, a primeira do produto %s.", in.productLine[i], pid))
				}
			}
		}
		p := in.products[i]
		v := &catalogv1.Variant{Sku: get("sku"), Title: get("variant_title"), Currency: "BRL", Active: true}
		if v.Title == "" {
			v.Title = p.GetTitle()
		}
		var msg string
		if v.Price, msg = parseCSVPrice(get("price")); msg != "" {
			bad("price", msg)
		}
		if s := get("stock"); s == "" {
			bad("stock", "Informe o estoque (0 ou mais).")
		} else if v.Stock, err = strconv.ParseInt(s, 10, 64); err != nil {
			v.Stock = 0
			bad("stock", fmt.Sprintf("%q não é um número inteiro.", s))
		}
		switch strings.ToLower(get("active")) {
		case "", "true", "1", "yes", "sim", "s", "y":
		case "false", "0", "no", "não", "nao", "n":
			v.Active = false
		default:
			bad("active", fmt.Sprintf("%q: use sim ou não.", get("active")))
		}
		p.Variants = append(p.Variants, v)
		in.variantLine[i] = append(in.variantLine[i], line)
	}
	if len(in.products) == 0 && len(in.local) == 0 {
		in.fatal = []importProblem{{Line: 2, Msg: "Nenhuma linha de produto depois do cabeçalho."}}
	}
	return in
}

// parseCSVPrice reads a CSV price into centavos with integer arithmetic,
// as bcpctl does: a bare integer ("5990") is centavos; an amount with a
// decimal comma ("59,90", "R$ 1.234,56") is reais, dots being thousands
// separators only; "59.90" is refused as ambiguous. A negative amount is
// returned as such: the catalog refuses it at its path.
func parseCSVPrice(s string) (int64, string) {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\u00a0", " "))
	neg := false
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		neg, s = true, strings.TrimSpace(rest)
	}
	if rest, ok := strings.CutPrefix(s, "R$"); ok {
		s = strings.TrimSpace(rest)
	}
	if rest, ok := strings.CutPrefix(s, "-"); ok && !neg {
		neg, s = true, strings.TrimSpace(rest)
	}
	if s == "" {
		return 0, "Informe o preço."
	}
	notPrice := fmt.Sprintf("%q não é um preço: use 59,90, 1.234,56 ou centavos inteiros (5990).", s)
	whole, frac, hasComma := strings.Cut(s, ",")
	var cents int64
	if !hasComma {
		if strings.Contains(s, ".") {
			return 0, fmt.Sprintf("%q é ambíguo: escreva reais com vírgula (59,90) ou centavos inteiros (5990).", s)
		}
	} else {
		if len(frac) == 0 || len(frac) > 2 || !csvDigits(frac) {
			return 0, fmt.Sprintf("%q: use um ou dois dígitos de centavos depois da vírgula (59,90).", s)
		}
		cents, _ = strconv.ParseInt(frac, 10, 64)
		if len(frac) == 1 {
			cents *= 10
		}
		groups := strings.Split(whole, ".")
		for i, g := range groups {
			if !csvDigits(g) || (len(groups) > 1 && (i == 0 && len(g) > 3 || i > 0 && len(g) != 3)) {
				return 0, notPrice
			}
		}
		whole = strings.Join(groups, "")
	}
	if !csvDigits(whole) {
		return 0, notPrice
	}
	n, err := strconv.ParseInt(whole, 10, 64)
	if err == nil && hasComma {
		if n > (math.MaxInt64-cents)/100 {
			err = strconv.ErrRange
		}
		n = n*100 + cents
	}
	if err != nil {
		return 0, fmt.Sprintf("%q é grande demais.", s)
	}
	if neg {
		n = -n
	}
	return n, ""
}

func csvDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
