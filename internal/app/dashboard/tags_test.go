package dashboard_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/fenced/fenced"
)

// TestJobBrowserFiltersByTag: /jobs?tag= lists the jobs carrying the tag,
// the filter form has a tag input, and a job's page shows its tags (each a
// link to the jobs carrying it) and its metadata.
func TestJobBrowserFiltersByTag(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	res, err := e.c.EnqueueMany(ctx, nil, []fenced.EnqueueParams{
		{Kind: "k", Tags: []string{"tenant:42", "urgent"}, Metadata: map[string]string{"trace": "abc-123"}},
		{Kind: "k"},
		{Kind: "k", Tags: []string{"tenant:7"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p := newPerson(t, e.url)
	pg := p.get("/jobs?tag=tenant:42")
	if pg.status != 200 {
		t.Fatalf("GET /jobs?tag=tenant:42 = %d:\n%s", pg.status, pg.body)
	}
	var got []int64
	for _, m := range jobLink.FindAllStringSubmatch(pg.body, -1) {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		got = append(got, id)
	}
	if len(got) != 1 || got[0] != res[0].Job.ID {
		t.Fatalf("jobs tagged tenant:42: %v, want [%d]", got, res[0].Job.ID)
	}
	if !strings.Contains(pg.body, `name="tag" value="tenant:42"`) {
		t.Fatalf("the filter form has no tag input holding the filter:\n%s", pg.body)
	}
	if bad := p.get("/jobs?tag=no%20spaces"); bad.status != 400 {
		t.Fatalf("GET /jobs?tag=no spaces = %d, want 400", bad.status)
	}
	job := p.get(fmt.Sprintf("/jobs/%d", res[0].Job.ID))
	for _, want := range []string{"Tags", "<code>tenant:42</code>", "<code>urgent</code>", "Metadata", "abc-123"} {
		if !strings.Contains(job.body, want) {
			t.Errorf("the job's page lacks %q:\n%s", want, job.body)
		}
	}
}
