package db

import (
	_ "embed"
	"fmt"
	"strings"
)

//go:embed checks/invariants.sql
var invariantsSQL string

// Invariant is one query of checks/invariants.sql: Query lists the rows
// (invariant, violation) that break it, Count how many rows it examined.
type Invariant struct {
	Name, Count, Query string
}

// InvariantsSQL is the file as it is (for psql, or to print).
func InvariantsSQL() string { return invariantsSQL }

// Invariants parses checks/invariants.sql into its queries.
func Invariants() ([]Invariant, error) {
	var out []Invariant
	for _, part := range strings.Split(invariantsSQL, "-- name: ")[1:] {
		name, rest, _ := strings.Cut(part, "\n")
		countLine, query, ok := strings.Cut(rest, "\n")
		count, isCount := strings.CutPrefix(countLine, "-- count: ")
		if !ok || !isCount {
			return nil, fmt.Errorf("db/checks/invariants.sql: %q has no -- count: line", name)
		}
		out = append(out, Invariant{Name: strings.TrimSpace(name), Count: strings.TrimSpace(count), Query: strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(query), ";"))})
	}
	return out, nil
}
