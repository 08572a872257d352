package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/chromedp/chromedp"

	"github.com/bcpdev/bcp/internal/saopaulo"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// The team page in a real browser (issue 34): a merchant admin invites a
// colleague and is shown, once, a link to send; the list says the
// invitation is pending until the link's expiry; the colleague chooses a
// password with the link, which then works no more, and signs in; the
// list no longer says pending. "Gerar novo link" on a pending invitation
// gives a new link and kills the old one.
func TestBrowserTeamInvite(t *testing.T) {
	const host = "equipe.localhost"
	chromiumPath(t)
	d := testdb.New(t)
	r := startPlatform(t, platform.AllServices, d.AppURL, nil)
	ctx := context.Background()
	ops := r.ClientsWithToken(operatorToken)
	tr, err := ops.Tenants.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{
		Name: "Loja Equipe", Domains: []string{host}, Environment: tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
	}))
	if err != nil {
		t.Fatal(err)
	}
	tid := tr.Msg.GetTenant().GetId()
	ownerPW := invite(t, r, tid, "dona@equipe.com.br")
	// expiresShown is the link expiry of email as the services keep it,
	// written as the admin shows times (Brasília).
	expiresShown := func(email string) string {
		t.Helper()
		l, err := ops.Tenants.ListMerchantUsers(ctx, connect.NewRequest(&tenantsv1.ListMerchantUsersRequest{Tenant: tid}))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range l.Msg.GetUsers() {
			if u.GetEmail() == email {
				if !u.GetInvitationPending() || u.GetInvitationExpireTime() == nil {
					t.Fatalf("%s is not pending: %+v", email, u)
				}
				return u.GetInvitationExpireTime().AsTime().In(saopaulo.Location).Format("02/01/2006 15:04")
			}
		}
		t.Fatalf("%s is not listed", email)
		return ""
	}

	c := newChrome(t, r)
	adm := c.tab(true)
	adm.open(host, "/admin/entrar")
	adm.fill(`input[name=email]`, "dona@equipe.com.br")
	adm.fill(`input[name=password]`, ownerPW)
	if st := adm.submit(`form[action="/admin/entrar"] button[type=submit]`); st != 200 || adm.location() != adm.url(host, "/admin/") {
		t.Fatalf("owner sign-in: %d at %s", st, adm.location())
	}
	if st := adm.open(host, "/admin/usuarios"); st != 200 {
		t.Fatalf("team page: %d", st)
	}
	adm.fill(`form.form[action="/admin/usuarios"] input[name=email]`, "caixa@equipe.com.br")
	adm.step("role staff", chromedp.SetValue(chromedp.CSS(`form.form[action="/admin/usuarios"] select[name=role]`), "staff"))
	if st := adm.submit(`form.form[action="/admin/usuarios"] button[type=submit]`); st != 200 {
		t.Fatalf("invite: %d", st)
	}
	linkRE := regexp.MustCompile(`^` + regexp.QuoteMeta(adm.url(host, "/admin/senha?token=")) + `[A-Za-z0-9_-]{43}$`)
	link := adm.text("#invite-link")
	if !linkRE.MatchString(link) {
		t.Fatalf("invite link %q", link)
	}
	if got := adm.text("#invite-result h2"); got != "Convite criado para caixa@equipe.com.br" {
		t.Fatalf("invite heading %q", got)
	}
	exp := expiresShown("caixa@equipe.com.br")
	if got := adm.text("#invite-expires"); got != exp {
		t.Fatalf("invite expiry shown %q, want %q", got, exp)
	}
	row := `tr[data-user="caixa@equipe.com.br"]`
	if got := adm.text(row + ` td[data-label="Último acesso"]`); got != "convite pendente link válido até "+exp {
		t.Fatalf("pending row: %q", got)
	}
	if got := adm.text(row + ` td[data-label="Papel"]`); got != "Equipe" {
		t.Fatalf("role: %q", got)
	}
	adm.screenshot("convite-criado")
	// Shown once: the team page again has no link.
	adm.open(host, "/admin/usuarios")
	if n := eval[int](adm, `document.querySelectorAll('#invite-link').length`); n != 0 || strings.Contains(adm.html(), link) {
		t.Fatal("the link is shown again")
	}
	if got := eval[string](adm, `document.querySelector('`+row+` [data-invitation]').dataset.invitation`); got != "pendente" {
		t.Fatalf("invitation state %q", got)
	}

	// The colleague follows the link once.
	col := c.tab(true)
	if st := col.navigation("open the invite link", chromedp.Navigate(link)); st != 200 || col.text("#link-email") != "caixa@equipe.com.br" {
		t.Fatalf("set-password page: %d", st)
	}
	col.fill(`input[name=password]`, "senha-do-caixa-1")
	col.fill(`input[name=password_again]`, "senha-do-caixa-1")
	if st := col.submit(`form[action="/admin/senha"] button[type=submit]`); st != 200 || col.location() != col.url(host, "/admin/entrar?ok=senha") {
		t.Fatalf("set password: %d at %s", st, col.location())
	}
	col.fill(`input[name=email]`, "caixa@equipe.com.br")
	col.fill(`input[name=password]`, "senha-do-caixa-1")
	if st := col.submit(`form[action="/admin/entrar"] button[type=submit]`); st != 200 || col.location() != col.url(host, "/admin/") {
		t.Fatalf("colleague sign-in: %d at %s", st, col.location())
	}
	again := c.tab(true)
	if st := again.navigation("open the used link", chromedp.Navigate(link)); st != 404 || !strings.Contains(again.text("#link-invalid"), "Este link não funciona mais") {
		t.Fatalf("the link a second time: %d", st)
	}

	// No longer pending; inviting again is refused.
	adm.open(host, "/admin/usuarios")
	if n := eval[int](adm, `document.querySelectorAll('`+row+` [data-invitation]').length`); n != 0 {
		t.Fatal("still pending after the link was used")
	}
	if got := adm.text(row + ` td[data-label="Último acesso"]`); !regexp.MustCompile(`^\d\d/\d\d/\d{4} \d\d:\d\d$`).MatchString(got) {
		t.Fatalf("last access after sign-in: %q", got)
	}
	adm.fill(`form.form[action="/admin/usuarios"] input[name=email]`, "caixa@equipe.com.br")
	if st := adm.submit(`form.form[action="/admin/usuarios"] button[type=submit]`); st != 422 || adm.text(`[data-field="email"]`) != "Este e-mail já faz parte da equipe (e já entrou no painel)." {
		t.Fatalf("invite a member again: %d", st)
	}

	// A pending invitation renewed from its row: a new link, the old one
	// stops working.
	adm.open(host, "/admin/usuarios")
	adm.fill(`form.form[action="/admin/usuarios"] input[name=email]`, "estoque@equipe.com.br")
	adm.submit(`form.form[action="/admin/usuarios"] button[type=submit]`)
	old := adm.text("#invite-link")
	adm.open(host, "/admin/usuarios")
	if st := adm.submit(`tr[data-user="estoque@equipe.com.br"] button[type=submit]`); st != 200 {
		t.Fatalf("new link: %d", st)
	}
	renewed := adm.text("#invite-link")
	if !linkRE.MatchString(renewed) || renewed == old || adm.text("#invite-result h2") != "Novo convite para estoque@equipe.com.br" ||
		adm.text("#invite-replaced") != "O link enviado antes deixou de funcionar." {
		t.Fatalf("renewed invitation: %q (old %q)", renewed, old)
	}
	if got := adm.text(`tr[data-user="estoque@equipe.com.br"] td[data-label="Último acesso"]`); got != "convite pendente link válido até "+expiresShown("estoque@equipe.com.br") {
		t.Fatalf("renewed row: %q", got)
	}
	adm.screenshot("novo-link")
	if st := again.navigation("open the replaced link", chromedp.Navigate(old)); st != 404 {
		t.Fatalf("the replaced link: %d", st)
	}
	if st := again.navigation("open the new link", chromedp.Navigate(renewed)); st != 200 || again.text("#link-email") != "estoque@equipe.com.br" {
		t.Fatalf("the new link: %d", st)
	}
}
