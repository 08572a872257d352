package admin

import "net/http"

// The merchant pages of issue 6 item 2 (signing keys, payment handlers,
// pickup points, CSV import, agent auth policy), kept apart from admin.go's
// route table so it changes in one line.

var merchantPages = []string{"keys", "keyrevoke", "handlers", "handler", "pickup", "import", "password"}

func init() {
	for k, v := range map[string]string{
		"girada":   "Nova chave gerada e publicada.",
		"removido": "Meio de pagamento removido.",
		"excluido": "Ponto de retirada excluído.",
		"senha":    "Senha definida. Entre com seu e-mail e a nova senha.",
	} {
		noticeText[k] = v
	}
}

func (a *Admin) merchantRoutes(get, post func(http.HandlerFunc) http.Handler, cop *http.CrossOriginProtection) map[string]http.Handler {
	return map[string]http.Handler{
		"GET /admin/chaves":                        get(a.adminOnly(a.signingKeys)),
		"POST /admin/chaves/girar":                 post(a.adminOnly(a.rotateSigningKey)),
		"GET /admin/chaves/{kid}/revogar":          get(a.adminOnly(a.confirmRevoke)),
		"POST /admin/chaves/{kid}/revogar":         post(a.adminOnly(a.revokeSigningKey)),
		"GET /admin/pagamentos":                    get(a.adminOnly(a.paymentHandlers)),
		"GET /admin/pagamentos/novo/{kind}":        get(a.adminOnly(a.newHandler)),
		"POST /admin/pagamentos/novo/{kind}":       post(a.adminOnly(a.saveHandler)),
		"GET /admin/pagamentos/{id}":               get(a.adminOnly(a.editHandler)),
		"POST /admin/pagamentos/{id}":              post(a.adminOnly(a.saveHandler)),
		"POST /admin/pagamentos/remover/{id}":      post(a.adminOnly(a.removeHandler)),
		"POST /admin/pagamentos/testar/{id}":       post(a.adminOnly(a.testHandler)),
		"GET /admin/frete/retirada/nova":           get(a.pickupEdit),
		"POST /admin/frete/retirada/nova":          post(a.pickupSave),
		"GET /admin/frete/retirada/{id}":           get(a.pickupEdit),
		"POST /admin/frete/retirada/{id}":          post(a.pickupSave),
		"POST /admin/frete/retirada/{id}/excluir":  post(a.pickupDelete),
		"GET /admin/produtos/importar":             get(a.importPage),
		"GET /admin/produtos/importar/exemplo.csv": get(a.importSample),
		"POST /admin/produtos/importar":            secure(cop.Handler(a.signedIn(a.uploadCSRF(a.importCSV)))),
		"POST /admin/agentes/politica":             post(a.adminOnly(a.saveAgentPolicy)),
		// The set-password page of an invitation link (onboarding.go):
		// no session yet, a sign-in style CSRF token.
		"GET /admin/senha":  secure(http.HandlerFunc(a.passwordPage)),
		"POST /admin/senha": secure(cop.Handler(http.HandlerFunc(a.setPassword))),
	}
}
