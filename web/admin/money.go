package admin

import "github.com/bcpdev/bcp/web/internal/money"

// The admin's money helpers are the shared ones (web/internal/money),
// under the names its pages use.
var (
	FormatBRL   = money.FormatBRL
	FormatReais = money.FormatReais
	ParseBRL    = money.ParseBRL
)
