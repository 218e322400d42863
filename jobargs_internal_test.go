package fenced

import (
	"reflect"
	"testing"
	"time"
)

// Every field of EnqueueParams but Kind and Args is an option of a typed
// job, of the same type, and ArgsParams carries each one through: a field
// added to one struct and not the other, or not copied, fails here.
func TestEnqueueOptionsMirrorEnqueueParams(t *testing.T) {
	pt, ot := reflect.TypeFor[EnqueueParams](), reflect.TypeFor[EnqueueOptions]()
	for i := range pt.NumField() {
		f := pt.Field(i)
		if f.Name == "Kind" || f.Name == "Args" {
			continue
		}
		if of, ok := ot.FieldByName(f.Name); !ok || of.Type != f.Type {
			t.Errorf("EnqueueParams.%s (%s) has no EnqueueOptions field of its type", f.Name, f.Type)
		}
	}
	if ot.NumField() != pt.NumField()-2 {
		t.Errorf("EnqueueOptions has %d fields, EnqueueParams %d: want all but Kind and Args", ot.NumField(), pt.NumField())
	}
	// Each option set to a non-zero value comes out in the params.
	var o EnqueueOptions
	ov := reflect.ValueOf(&o).Elem()
	for i := range ov.NumField() {
		f := ov.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int, reflect.Int64:
			f.SetInt(7)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Interface:
			f.Set(reflect.ValueOf(map[string]int{"a": 1}))
		case reflect.Struct:
			if f.Type() == reflect.TypeFor[time.Time]() {
				f.Set(reflect.ValueOf(time.Unix(1, 0)))
			}
		}
	}
	p, err := ArgsParams(plainKind{}, &o)
	if err != nil {
		t.Fatal(err)
	}
	pv := reflect.ValueOf(p)
	for i := range ov.NumField() {
		name := ot.Field(i).Name
		if !reflect.DeepEqual(pv.FieldByName(name).Interface(), ov.Field(i).Interface()) {
			t.Errorf("ArgsParams dropped option %s: %v, want %v", name, pv.FieldByName(name).Interface(), ov.Field(i).Interface())
		}
	}
}

type plainKind struct{}

func (plainKind) Kind() string { return "plain" }
