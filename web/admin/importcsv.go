package admin

import (
	"cmp"
	"crypto/hmac"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/catalogcsv"
	catalogv1 "github.com/bcpdev/bcp/proto/gen/bcp/catalog/v1"
)

// Catalog import from a CSV file: the format of `bcpctl catalog import`
// (one row per variant, the same columns and value rules), applied all or
// nothing by the catalog's ImportProducts. Every problem is listed by
// line and column; when there is one, nothing changes.

const maxImportBytes = 2 << 20

// importColumns are the CSV columns, all required.
var importColumns = catalogcsv.Columns

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

// importInput is a CSV read into products (catalogcsv.Parse), its problems
// worded in Portuguese.
type importInput struct {
	products []*catalogv1.Product
	fatal    []importProblem
	local    []importProblem
	file     *catalogcsv.File
}

// The catalog's codes in Portuguese; other codes keep its message.
var importCodePT = map[string]string{
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

// locate points a catalog ImportError at the file's line and column.
func (in *importInput) locate(e *catalogv1.ImportError) importProblem {
	msg := importCodePT[e.GetCode()]
	if msg == "" {
		msg = e.GetMessage()
	}
	line, col := in.file.Locate(e.GetPath())
	return importProblem{Line: line, Column: col, Msg: msg, order: catalogcsv.ColumnOrder(col)}
}

// parseImportCSV reads the file and words its problems in Portuguese.
func parseImportCSV(b []byte) *importInput {
	f := catalogcsv.Parse(b)
	in := &importInput{products: f.Products, file: f}
	for _, p := range f.Fatal {
		in.fatal = append(in.fatal, importProblem{Line: p.Line, Column: p.Column, Msg: csvProblemPT(p)})
	}
	for _, p := range f.Problems {
		in.local = append(in.local, importProblem{Line: p.Line, Column: p.Column, Msg: csvProblemPT(p), order: max(catalogcsv.ColumnOrder(p.Column), 0)})
	}
	return in
}

// parseCSVPrice is catalogcsv.ParsePrice with a Portuguese message.
func parseCSVPrice(s string) (int64, string) {
	n, code, v := catalogcsv.ParsePrice(s)
	if code != "" {
		return 0, csvProblemPT(catalogcsv.Problem{Code: code, Value: v})
	}
	return n, ""
}

// csvProblemPT words a CSV problem (its line and column are shown apart).
func csvProblemPT(p catalogcsv.Problem) string {
	switch p.Code {
	case catalogcsv.NoHeader:
		return "O arquivo precisa de uma linha de cabeçalho: " + strings.Join(importColumns, ",")
	case catalogcsv.UnknownColumn:
		return "Coluna desconhecida."
	case catalogcsv.DuplicateColumn:
		return "Coluna repetida."
	case catalogcsv.MissingColumn:
		return "Coluna obrigatória ausente."
	case catalogcsv.NoRows:
		return "Nenhuma linha de produto depois do cabeçalho."
	case catalogcsv.MalformedCSV:
		return "CSV malformado (aspas não fechadas ou fora de lugar)."
	case catalogcsv.FieldCount:
		return fmt.Sprintf("Esperados %d campos, há %d.", p.Want, p.Got)
	case catalogcsv.DiffersFirst:
		return fmt.Sprintf("Diferente da linha %d, a primeira do produto %s.", p.FirstLine, p.ProductID)
	case catalogcsv.MissingPrice:
		return "Informe o preço."
	case catalogcsv.AmbiguousPrice:
		return fmt.Sprintf("%q é ambíguo: escreva reais com vírgula (59,90) ou centavos inteiros (5990).", p.Value)
	case catalogcsv.BadCents:
		return fmt.Sprintf("%q: use um ou dois dígitos de centavos depois da vírgula (59,90).", p.Value)
	case catalogcsv.BadPrice:
		return fmt.Sprintf("%q não é um preço: use 59,90, 1.234,56 ou centavos inteiros (5990).", p.Value)
	case catalogcsv.PriceTooLarge:
		return fmt.Sprintf("%q é grande demais.", p.Value)
	case catalogcsv.MissingStock:
		return "Informe o estoque (0 ou mais)."
	case catalogcsv.BadStock:
		return fmt.Sprintf("%q não é um número inteiro.", p.Value)
	case catalogcsv.BadActive:
		return fmt.Sprintf("%q: use sim ou não.", p.Value)
	}
	return string(p.Code)
}
