package catalog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/services/catalog/searchplan"
)

// The search statements use the indexes for every filter combination the
// schema allows (query text or none × categories × price min/max × first or
// later page), on a catalog of a few thousand ANALYZEd rows over several
// tenants: never a sequential scan, and a text query always goes through its
// text index (full text; for a typo, the trigram index of the merchant's
// words, then full text with the corrected words). Plans are read with
// EXPLAIN of the exact statement and arguments the service sent, as the
// application role in the tenant's scope; both the custom plan (what the
// first executions of a prepared statement get) and the generic plan (what
// PostgreSQL may switch to) are checked.
func TestSearchPlansUseIndexes(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	super, err := pgx.Connect(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close(ctx)
	// Four tenants × 1 000 products × 3 variants, titles from a Portuguese
	// vocabulary so words are as selective as in a real shop.
	var tenants [4]string
	for i := range tenants {
		tenants[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)
	}
	_, err = super.Exec(ctx, `
		INSERT INTO catalog.products (tenant_id, id, title, description, category)
		SELECT t::uuid, 'prd_' || lpad(i::text, 5, '0'),
		  (ARRAY['Camiseta','Caneca','Café','Chinelo','Boné','Mochila','Garrafa','Caderno','Toalha','Meia','Almofada','Luminária',
		         'Vaso','Relógio','Jaqueta','Bermuda','Sandália','Tênis','Óculos','Colar','Pulseira','Carteira','Cinto','Lenço',
		         'Agenda','Estojo','Panela','Frigideira','Travesseiro','Cobertor','Tapete','Cortina','Espelho','Quadro','Vela',
		         'Sabonete','Perfume','Shampoo','Escova','Pente'])[1 + i % 40] || ' ' ||
		  (ARRAY['Básica','Premium','Estampada','Lisa','Clássica','Esportiva','Infantil','Térmica','Artesanal','Orgânica'])[1 + (i / 40) % 10] || ' ' ||
		  (ARRAY['Preta','Branca','Azul','Vermelha','Verde','Amarela','Rosa','Cinza'])[1 + (i / 200) % 8] || ' ' || i,
		  'Produto número ' || i || ' feito no Brasil, de qualidade.',
		  (ARRAY['Vestuário','Cozinha','Casa','Acessórios','Calçados'])[1 + i % 5]
		FROM unnest($1::text[]) t, generate_series(1, 1000) i`, tenants[:])
	if err != nil {
		t.Fatal(err)
	}
	_, err = super.Exec(ctx, `
		INSERT INTO catalog.variants (tenant_id, id, product_id, sku, title, price, stock)
		SELECT tenant_id, 'var_' || substr(id, 5) || '_' || s, id, 'SKU-' || id || '-' || s, 'Tamanho ' || s,
		       1000 + (hashtext(id || s) & 32767), s
		FROM catalog.products, generate_series(0, 2) s`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := super.Exec(ctx, `ANALYZE catalog.products; ANALYZE catalog.variants; ANALYZE catalog.search_words`); err != nil {
		t.Fatal(err)
	}

	rec := searchplan.NewRecorder()
	pool := d.OneConnPool(t, rec)
	checked, err := searchplan.Check(ctx, pool, rec, uuid.MustParse(tenants[0]), false)
	if err != nil {
		t.Fatal(err)
	}
	// 48 combinations, 16 of them typos that also correct their words,
	// each in 2 modes.
	if len(checked) != (48+16)*2 {
		t.Fatalf("%d plans checked, want (48 combinations + 16 corrections) × 2 modes", len(checked))
	}
	reported := false
	for _, c := range checked {
		if !reported && c.Statement == "SearchProducts" && c.Mode == "force_custom_plan" {
			t.Logf("plan of %s (%s):\n%s", c.Statement, c.Combo, c.Plan.Text)
			reported = true
		}
		for _, p := range c.Problems {
			t.Errorf("%s (%s): %s\n%s", c.Combo, c.Mode, p, c.Plan.Text)
		}
	}
}
