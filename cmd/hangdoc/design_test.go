package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestImportsFollowDesign: what each package imports of hangdoc is what
// docs/DESIGN.md's package table allows, and every package is in it.
func TestImportsFollowDesign(t *testing.T) {
	b, err := os.ReadFile("../../docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(b), "## Packages")
	table, _, _ = strings.Cut(table, "\n## ")
	allowed := map[string][]string{} // package → what it may import; nil: anything
	row := regexp.MustCompile("(?m)^\\| `([a-z/]+)` \\|[^|]*\\| ([^|]*) \\|$")
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		may := []string{}
		if strings.TrimSpace(m[2]) == "anything" {
			may = nil
		}
		for _, im := range regexp.MustCompile("`([a-z/]+)`").FindAllStringSubmatch(m[2], -1) {
			may = append(may, im[1])
		}
		allowed[m[1]] = may
	}
	const mod = "github.com/hangdoc/hangdoc/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], mod)
		if strings.Contains(pkg, "/internal/") || strings.HasPrefix(pkg, "internal/bigdump/") {
			continue // a package's own internals
		}
		may, ok := allowed[pkg]
		if !ok {
			t.Errorf("package %s is not in docs/DESIGN.md's package table", pkg)
			continue
		}
		for _, im := range f[1:] {
			dep, ours := strings.CutPrefix(im, mod)
			if !ours || may == nil || strings.HasPrefix(dep, pkg+"/internal/") {
				continue
			}
			if !slices.Contains(may, dep) {
				t.Errorf("%s imports %s, which docs/DESIGN.md does not allow it", pkg, dep)
			}
		}
	}
}
