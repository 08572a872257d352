// Package layout holds no code: its test checks the repository's import
// rules, the ones the service boundaries rest on.
package layout
