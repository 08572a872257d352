// Command derive regenerates protocol/bcpschema/schemas from the upstream UCP
// release tree. Run from the repository root:
//
//	go run ./protocol/bcpschema/internal/derive \
//	  -src ../shared/reference/ucp/release-2026-04-08/source \
//	  -out protocol/bcpschema/schemas
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bcpdev/bcp/protocol/bcpschema/internal/derivation"
)

func main() {
	src := flag.String("src", "", "upstream release source/ directory (contains schemas/ and discovery/)")
	out := flag.String("out", "protocol/bcpschema/schemas", "output directory")
	license := flag.String("license", "", "upstream LICENSE file (default: <src>/../../LICENSE-upstream)")
	flag.Parse()
	if *src == "" {
		fmt.Fprintln(os.Stderr, "derive: -src is required")
		os.Exit(2)
	}
	if *license == "" {
		*license = filepath.Join(*src, "..", "..", "LICENSE-upstream")
	}
	res, err := derivation.Derive(*src, *license)
	if err != nil {
		fmt.Fprintln(os.Stderr, "derive:", err)
		os.Exit(1)
	}
	if err := derivation.Write(*out, res); err != nil {
		fmt.Fprintln(os.Stderr, "derive:", err)
		os.Exit(1)
	}
	for _, l := range res.Log {
		fmt.Fprintln(os.Stderr, l)
	}
	fmt.Fprintf(os.Stderr, "wrote %d files to %s\n", len(res.Files), *out)
}
