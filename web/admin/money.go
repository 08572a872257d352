package admin

import "github.com/bcpdev/bcp/internal/money"

// The admin's money helpers are the shared ones (internal/money),
// under the names its pages use.
var (
	FormatBRL   = money.FormatBRL
	FormatReais = money.FormatReais
	// FormatDecimal is the exports' "1234.56".
	FormatDecimal = money.FormatDecimal
	ParseBRL      = money.ParseBRL
)
