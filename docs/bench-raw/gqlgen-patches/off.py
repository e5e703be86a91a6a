#!/usr/bin/env python3
# off.py N: turns gqlgen patch N off in the tree at cwd (issue 31 ablation).
import sys, shutil, os
UP = "/root/go/pkg/mod/github.com/99designs/gqlgen@v0.17.98"
G = "third_party/gqlgen"
n = int(sys.argv[1])

def up(f):
    shutil.copyfile(os.path.join(UP, f), os.path.join(G, f))
    os.chmod(os.path.join(G, f), 0o644)

def sub(f, old, new):
    p = os.path.join(G, f)
    s = open(p).read()
    assert s.count(old) == 1, (f, old)
    open(p, "w").write(s.replace(old, new))

if n == 1:
    up("graphql/deferred.go"); up("graphql/resolve_concurrently.go")
elif n == 2:
    sub("graphql/slice.go", "if length == 1 || resolvedAhead(ctx) {", "if length == 1 { // issue 31: patch 2 off")
    sub("graphql/fieldset.go", "if len(m.delayed) == 1 || (len(m.delayed) > 1 && resolvedAhead(ctx)) {",
        "if len(m.delayed) == 1 { // issue 31: patch 2 off")
elif n == 3:
    sub("graphql/fieldset.go", "\tif len(m.fields) > maxLinearFields {\n\t\tmarshalFieldSet(writer, m.allFieldValues())\n\t\treturn\n\t}\n",
        "\tif true { // issue 31: patch 3 off\n\t\tmarshalFieldSet(writer, m.allFieldValues())\n\t\treturn\n\t}\n")
elif n == 4:
    up("codegen/object.gotpl")
elif n == 5:
    up("graphql/collect_fields_cache_store.go")
elif n == 6:
    up("graphql/bool.go"); up("graphql/time.go")
elif n == 7:
    up("codegen/field.gotpl")
elif n == 8:
    sub("codegen/internal!.gotpl", "\t\t\tif response.Path == nil { {{- /* NEBULA PATCH (8): the first response, not a deferred part */}}\n\t\t\t\tbuf.Grow(opCtx.ResponseSizeHint)\n\t\t\t}\n", "")
    sub("codegen/internal!.gotpl", "\t\t\tbuf.Grow(opCtx.ResponseSizeHint) {{- /* NEBULA PATCH (8) */}}\n", "")
elif n == 9:
    sub("graphql/fieldset.go", "\tif len(fields) <= tinyFieldSet {", "\tif false && len(fields) <= tinyFieldSet { // issue 31: patch 9 off")
    sub("graphql/fieldset.go", "\tif len(fields) <= smallFieldSet {", "\tif false && len(fields) <= smallFieldSet {")
elif n == 10:
    up("graphql/resolve_field.go")
elif n == 11:
    sub("graphql/slice.go", "\tc := &elementContext{Context: ctx, i: i}\n\tc.fc.Index = &c.i\n\tc.fc.Parent = GetFieldContext(ctx)\n\treturn c\n",
        "\treturn WithFieldContext(ctx, &FieldContext{Index: &i}) // issue 31: patch 11 off\n")
elif n == 12:
    sub("codegen/internal!.gotpl", "\t\t\tbuf := opCtx.ResponseBuffer {{- /* NEBULA PATCH (12): the caller's buffer, for the first response only */}}\n\t\t\tif buf == nil || response.Path != nil {\n\t\t\t\tbuf = &bytes.Buffer{}\n\t\t\t}\n",
        "\t\t\tbuf := &bytes.Buffer{}\n")
    sub("codegen/internal!.gotpl", "\t\t\tbuf := opCtx.ResponseBuffer {{- /* NEBULA PATCH (12) */}}\n\t\t\tif buf == nil {\n\t\t\t\tbuf = &bytes.Buffer{}\n\t\t\t}\n",
        "\t\t\tbuf := &bytes.Buffer{}\n")
print("patch", n, "off")
