package dashboard_test

import (
	"strings"
	"testing"
)

// TestConcurrencyKeys: the overview shows a "Concurrency keys" table only
// when a key has running or due jobs; a full key's row is highlighted with
// the count of jobs its limit holds back.
func TestConcurrencyKeys(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enqueue("email.send", "mail", 5)
	if _, _, body := get(t, e.url+"/"); strings.Contains(body, "Concurrency keys") {
		t.Fatal("the overview shows concurrency keys when no job has one")
	}

	e.call("PUT", "/v1/queues/mail/limit", map[string]any{"per_key": 1}, 200, nil)
	for range 3 {
		e.call("POST", "/v1/jobs", map[string]any{"kind": "email.send", "queue": "mail",
			"concurrency_key": "tenant-<7>"}, 201, nil)
	}
	e.call("POST", "/v1/jobs", map[string]any{"kind": "email.send", "queue": "mail",
		"concurrency_key": "tenant-8"}, 201, nil)
	e.claim("mail", "worker-a", 3, 60_000) // the unkeyed job, one of each key

	_, _, body := get(t, e.url+"/")
	i := strings.Index(body, `<section id="keys">`)
	if i < 0 {
		t.Fatalf("no concurrency keys section:\n%s", body)
	}
	keys := body[i : i+strings.Index(body[i:], "</section>")]
	for _, want := range []string{
		`<tr class="held-back"><td><code>mail</code></td><td><code>tenant-&lt;7&gt;</code></td><td class="num">1</td><td class="num">1</td><td class="num">2</td><td><span class="badge expired">2 held back</span></td></tr>`,
		`<tr><td><code>mail</code></td><td><code>tenant-8</code></td><td class="num">1</td><td class="num">1</td><td class="num zero">0</td><td></td></tr>`,
	} {
		if !strings.Contains(keys, want) {
			t.Errorf("the keys table lacks %s:\n%s", want, keys)
		}
	}
}
