package server

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// Every field of the schema that pages (an argument first or last) has its
// price in complexity(): an unpriced one costs 1 whatever page it returns,
// and 200 aliases of it read what the limit was meant to stop (issue 30,
// row 5: Service.logs and Cluster.revisions were unpriced).
func TestEveryListIsPriced(t *testing.T) {
	raw, err := os.ReadFile("../../schema.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	schema, gerr := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphqls", Input: string(raw)})
	if gerr != nil {
		t.Fatal(gerr)
	}
	root := reflect.ValueOf(complexity())
	checked := 0
	for _, def := range schema.Types {
		if def.Kind != ast.Object || def.BuiltIn || def.Name == "Subscription" {
			continue
		}
		for _, f := range def.Fields {
			if f.Arguments.ForName("first") == nil && f.Arguments.ForName("last") == nil {
				continue
			}
			checked++
			typ := root.FieldByName(def.Name)
			if !typ.IsValid() {
				t.Errorf("%s.%s pages, and complexity() has no %s", def.Name, f.Name, def.Name)
				continue
			}
			fn := fieldFold(typ, f.Name)
			if !fn.IsValid() || fn.IsNil() {
				t.Errorf("%s.%s pages and has no price in complexity()", def.Name, f.Name)
			}
		}
	}
	if checked < 25 {
		t.Fatalf("found %d paging fields; is the schema read?", checked)
	}
}

// fieldFold is the struct field named like name, case aside (gqlgen names
// apiTokens APITokens).
func fieldFold(v reflect.Value, name string) reflect.Value {
	for i := range v.NumField() {
		if strings.EqualFold(v.Type().Field(i).Name, name) {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}
