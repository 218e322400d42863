package wire

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

func TestMergeAddsMembersAfterTheValues(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 4, 5, 600_000_000, time.UTC)
	b, err := json.Marshal(Enqueued{Job: fenced.Job{ID: 3, Kind: "k", RunAt: at, CreatedAt: at}, Existing: true})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`{"id":3,"kind":"k"`, `"run_at":"2026-11-29T12:04:05.600000Z"`, `,"existing":true}`} {
		if !strings.Contains(s, want) {
			t.Errorf("Enqueued encodes as %s, without %s", s, want)
		}
	}
	for _, c := range []struct {
		v, extra any
		want     string
	}{
		{struct{}{}, struct{}{}, `{}`},
		{struct{ A int }{1}, struct{}{}, `{"A":1}`},
		{struct{}{}, struct{ B int }{2}, `{"B":2}`},
		{struct{ A string }{"<&>"}, struct{ B Time }{Time(at)}, `{"A":"<&>","B":"2026-11-29T12:04:05.600000Z"}`},
	} {
		got, err := Merge(c.v, c.extra)
		if err != nil || string(got) != c.want {
			t.Errorf("Merge(%v, %v) = %s, %v; want %s", c.v, c.extra, got, err, c.want)
		}
	}
	if _, err := Merge([]int{1}, struct{}{}); err == nil {
		t.Error("Merge of an array: no error")
	}
}

func TestResourceTimeInTimeLayout(t *testing.T) {
	at := time.Date(2026, 11, 29, 17, 4, 5, 123_456_000, time.FixedZone("east", 5*3600))
	b, err := json.Marshal(ResourceFrom(&fenced.Resource{Key: "k", Value: []byte("v"), UpdatedAt: at}))
	if err != nil || !strings.Contains(string(b), `"updated_at":"2026-11-29T12:04:05.123456Z"`) {
		t.Fatalf("resource encodes as %s (%v)", b, err)
	}
}
