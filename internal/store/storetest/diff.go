package storetest

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"
)

var timeType = reflect.TypeFor[time.Time]()

// assertEqual reports every field where got differs from want. Times are
// compared with Equal, since drivers hand back the same instant in a
// different location; everything else, including nil against empty slices
// and maps, must match exactly.
func assertEqual(t testing.TB, what string, got, want any) {
	t.Helper()
	var diffs []string
	diff(what, reflect.ValueOf(got), reflect.ValueOf(want), &diffs)
	for _, d := range diffs {
		t.Error(d)
	}
}

func diff(path string, got, want reflect.Value, out *[]string) {
	report := func() { *out = append(*out, fmt.Sprintf("%s: got %s, want %s", path, show(got), show(want))) }
	if !got.IsValid() || !want.IsValid() {
		if got.IsValid() != want.IsValid() {
			report()
		}
		return
	}
	if got.Type() != want.Type() {
		*out = append(*out, fmt.Sprintf("%s: got type %s, want %s", path, got.Type(), want.Type()))
		return
	}
	if got.Type() == timeType {
		if !got.Interface().(time.Time).Equal(want.Interface().(time.Time)) {
			report()
		}
		return
	}
	switch got.Kind() {
	case reflect.Pointer, reflect.Interface:
		if got.IsNil() || want.IsNil() {
			if got.IsNil() != want.IsNil() {
				report()
			}
			return
		}
		diff(path, got.Elem(), want.Elem(), out)
	case reflect.Struct:
		for i := range got.NumField() {
			diff(path+"."+got.Type().Field(i).Name, got.Field(i), want.Field(i), out)
		}
	case reflect.Slice:
		if got.IsNil() != want.IsNil() || got.Len() != want.Len() {
			report()
			return
		}
		if got.Type().Elem().Kind() == reflect.Uint8 {
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				report()
			}
			return
		}
		for i := range got.Len() {
			diff(fmt.Sprintf("%s[%d]", path, i), got.Index(i), want.Index(i), out)
		}
	case reflect.Map:
		if got.IsNil() != want.IsNil() || got.Len() != want.Len() {
			report()
			return
		}
		for _, k := range want.MapKeys() {
			g := got.MapIndex(k)
			if !g.IsValid() {
				*out = append(*out, fmt.Sprintf("%s[%v]: missing, want %s", path, k, show(want.MapIndex(k))))
				continue
			}
			diff(fmt.Sprintf("%s[%v]", path, k), g, want.MapIndex(k), out)
		}
	default:
		if !reflect.DeepEqual(got.Interface(), want.Interface()) {
			report()
		}
	}
}

// show renders a value for a message: pointers by what they point at, times
// in RFC 3339 with their zone, nil slices apart from empty ones.
func show(v reflect.Value) string {
	if !v.IsValid() {
		return "<none>"
	}
	if v.Type() == timeType {
		return v.Interface().(time.Time).Format(time.RFC3339Nano)
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "nil"
		}
		return "&" + show(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return "nil"
		}
		return show(v.Elem())
	case reflect.Slice, reflect.Map:
		if v.IsNil() {
			return "nil"
		}
	}
	return fmt.Sprintf("%#v", v.Interface())
}
