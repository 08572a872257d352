package pricing

// cepUF is the Correios allocation of CEP ranges to UFs. Carriers route
// by CEP, so a destination's UF for rate matching comes from its CEP, and
// an address_region that contradicts the CEP is reported.
var cepUF = []struct {
	from, to, uf string
}{
	{"01000000", "19999999", "SP"},
	{"20000000", "28999999", "RJ"},
	{"29000000", "29999999", "ES"},
	{"30000000", "39999999", "MG"},
	{"40000000", "48999999", "BA"},
	{"49000000", "49999999", "SE"},
	{"50000000", "56999999", "PE"},
	{"57000000", "57999999", "AL"},
	{"58000000", "58999999", "PB"},
	{"59000000", "59999999", "RN"},
	{"60000000", "63999999", "CE"},
	{"64000000", "64999999", "PI"},
	{"65000000", "65999999", "MA"},
	{"66000000", "68899999", "PA"},
	{"68900000", "68999999", "AP"},
	{"69000000", "69299999", "AM"},
	{"69300000", "69399999", "RR"},
	{"69400000", "69899999", "AM"},
	{"69900000", "69999999", "AC"},
	{"70000000", "72799999", "DF"},
	{"72800000", "72999999", "GO"},
	{"73000000", "73699999", "DF"},
	{"73700000", "76799999", "GO"},
	{"76800000", "76999999", "RO"},
	{"77000000", "77999999", "TO"},
	{"78000000", "78899999", "MT"},
	{"79000000", "79999999", "MS"},
	{"80000000", "87999999", "PR"},
	{"88000000", "89999999", "SC"},
	{"90000000", "99999999", "RS"},
}

// ufOfCEP returns the UF a normalised CEP belongs to, or "" for the
// unallocated 00000-000..00999-999.
func ufOfCEP(cep string) string {
	for _, r := range cepUF {
		if cep >= r.from && cep <= r.to {
			return r.uf
		}
	}
	return ""
}
