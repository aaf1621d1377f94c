package report_test

// The hangdoc/v1 JSON Schema (docs/hangdoc-v1.schema.json) is checked
// three ways: every golden document of the repository validates against
// it, every JSON field of the Go model is in it, and every field in it is
// documented in docs/json.md. The validator below knows the part of JSON
// Schema the file uses: type, properties, required,
// additionalProperties: false, items, $ref to $defs, anyOf, enum, const.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/report"
)

type schema struct {
	Type                 any                `json:"type"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	AdditionalProperties *bool              `json:"additionalProperties"`
	Items                *schema            `json:"items"`
	Ref                  string             `json:"$ref"`
	AnyOf                []*schema          `json:"anyOf"`
	Enum                 []any              `json:"enum"`
	Const                any                `json:"const"`
	Defs                 map[string]*schema `json:"$defs"`
}

func loadSchema(t *testing.T) *schema {
	t.Helper()
	b, err := os.ReadFile("../docs/hangdoc-v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("the schema: %v", err)
	}
	return &s
}

// validate returns the first place v breaks s, or "".
func (root *schema) validate(s *schema, v any, at string) string {
	if s.Ref != "" {
		d := root.Defs[strings.TrimPrefix(s.Ref, "#/$defs/")]
		if d == nil {
			return at + ": unknown $ref " + s.Ref
		}
		return root.validate(d, v, at)
	}
	if s.AnyOf != nil {
		var errs []string
		for _, alt := range s.AnyOf {
			e := root.validate(alt, v, at)
			if e == "" {
				return ""
			}
			errs = append(errs, e)
		}
		return strings.Join(errs, "; or ")
	}
	if s.Const != nil && !reflect.DeepEqual(s.Const, v) {
		return fmt.Sprintf("%s: %v, want %v", at, v, s.Const)
	}
	if s.Enum != nil && !slices.ContainsFunc(s.Enum, func(e any) bool { return reflect.DeepEqual(e, v) }) {
		return fmt.Sprintf("%s: %v, want one of %v", at, v, s.Enum)
	}
	if s.Type != nil {
		types := []string{}
		switch t := s.Type.(type) {
		case string:
			types = append(types, t)
		case []any:
			for _, x := range t {
				types = append(types, x.(string))
			}
		}
		if !slices.Contains(types, jsonType(v)) && !(jsonType(v) == "integer" && slices.Contains(types, "number")) {
			return fmt.Sprintf("%s: a JSON %s, want %v", at, jsonType(v), types)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range s.Required {
			if _, ok := x[r]; !ok {
				return fmt.Sprintf("%s: no %q", at, r)
			}
		}
		for k, val := range x {
			p := s.Properties[k]
			if p == nil {
				if s.AdditionalProperties != nil && !*s.AdditionalProperties {
					return fmt.Sprintf("%s: field %q is not in the schema", at, k)
				}
				continue
			}
			if e := root.validate(p, val, at+"."+k); e != "" {
				return e
			}
		}
	case []any:
		if s.Items != nil {
			for i, it := range x {
				if e := root.validate(s.Items, it, fmt.Sprintf("%s[%d]", at, i)); e != "" {
					return e
				}
			}
		}
	}
	return ""
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		if strings.ContainsAny(x.String(), ".eE") {
			return "number"
		}
		return "integer"
	}
	return fmt.Sprintf("%T", v)
}

// goldenDocuments are every hangdoc/v1 document the repository keeps:
// the report goldens' snapshots, the stored hangdoc JSON dumps, and the
// snapshot of every parser golden.
func goldenDocuments(t *testing.T) map[string]any {
	t.Helper()
	docs := map[string]any{}
	var paths []string
	for _, pat := range []string{"testdata/snapshots/*.json", "../testdata/dumps/*/*.json"} {
		m, _ := filepath.Glob(pat)
		paths = append(paths, m...)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			continue // not JSON: a dump of another format
		}
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if snap, ok := m["snapshot"].(map[string]any); ok && strings.HasSuffix(p, ".golden.json") {
			m = snap // a parser golden: {"skipped": …, "snapshot": …}
		}
		if m["schema"] == "hangdoc/v1" {
			docs[p] = m
		}
	}
	if len(docs) < 20 {
		t.Fatalf("only %d hangdoc/v1 documents found", len(docs))
	}
	return docs
}

func TestGoldensMatchSchema(t *testing.T) {
	s := loadSchema(t)
	docs := goldenDocuments(t)
	for p, d := range docs {
		if e := s.validate(s, d, "$"); e != "" {
			t.Errorf("%s: %s", p, e)
		}
	}
	t.Logf("%d documents valid", len(docs))
}

// The validator rejects what it must: a test that cannot fail proves
// nothing.
func TestSchemaRejects(t *testing.T) {
	s := loadSchema(t)
	for _, bad := range []string{
		`{"source": "gdb", "samples": 1, "evidence": {"owners": false, "cpu": false, "syscalls": false, "lineage": false, "arguments": false}, "processes": []}`,
		`{"schema": "hangdoc/v2", "source": "gdb", "samples": 1, "evidence": {"owners": false, "cpu": false, "syscalls": false, "lineage": false, "arguments": false}, "processes": []}`,
		`{"schema": "hangdoc/v1", "source": "gdb", "samples": 1, "evidence": {"owners": false, "cpu": false, "syscalls": false, "lineage": false, "arguments": false}, "processes": [{"pid": "1", "threads": []}]}`,
		`{"schema": "hangdoc/v1", "source": "gdb", "samples": 1, "evidence": {"owners": false, "cpu": false, "syscalls": false, "lineage": false, "arguments": false}, "processes": [], "undocumented": 1}`,
		`{"schema": "hangdoc/v1", "source": "gdb", "samples": 1, "evidence": {"owners": false, "cpu": false, "syscalls": false, "lineage": false, "arguments": false}, "processes": [], "diagnoses": [{"id": "x", "confidence": "sure"}]}`,
	} {
		dec := json.NewDecoder(strings.NewReader(bad))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if e := s.validate(s, v, "$"); e == "" {
			t.Errorf("accepted: %s", bad)
		}
	}
}

// TestSchemaCoversModel: every JSON field of the Go types a document is
// made of is in the schema, and every field of the schema is documented
// in docs/json.md, in the section of its type.
func TestSchemaCoversModel(t *testing.T) {
	s := loadSchema(t)
	doc, err := os.ReadFile("../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, part := range strings.Split(string(doc), "\n## ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		sections[name] = body
	}
	seen := map[reflect.Type]bool{}
	var walk func(tp reflect.Type, def string, sc *schema)
	walk = func(tp reflect.Type, def string, sc *schema) {
		for tp.Kind() == reflect.Pointer || tp.Kind() == reflect.Slice {
			tp = tp.Elem()
		}
		if tp.Kind() != reflect.Struct || seen[tp] || tp.PkgPath() == "time" {
			return
		}
		seen[tp] = true
		for name := range sc.Properties {
			if !strings.Contains(sections[def], "| `"+name+"` |") {
				t.Errorf("docs/json.md's section %q does not document %q", def, name)
			}
		}
		var fields func(tp reflect.Type)
		fields = func(tp reflect.Type) {
			for i := 0; i < tp.NumField(); i++ {
				f := tp.Field(i)
				tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if f.Anonymous && tag == "" {
					ft := f.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					fields(ft)
					continue
				}
				if tag == "-" || !f.IsExported() {
					continue
				}
				p := sc.Properties[tag]
				if p == nil {
					t.Errorf("%s.%s (json %q) is not in the schema's %s", tp.Name(), f.Name, tag, def)
					continue
				}
				if p.AnyOf != nil {
					p = p.AnyOf[0]
				}
				if p.Items != nil {
					p = p.Items
				}
				if ref := strings.TrimPrefix(p.Ref, "#/$defs/"); ref != "" {
					walk(f.Type, ref, s.Defs[ref])
				}
			}
		}
		fields(tp)
	}
	walk(reflect.TypeOf(report.Document{}), "The document", s)
}
