package dashboard_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// person is a browser: it keeps cookies and does not follow redirects, so
// a test sees each answer.
type person struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newPerson(t *testing.T, base string) *person {
	jar, _ := cookiejar.New(nil)
	return &person{t: t, base: base, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// page is one answer: status, Location and body.
type page struct {
	status   int
	location string
	body     string
	header   http.Header
}

func (p *person) do(req *http.Request) page {
	p.t.Helper()
	resp, err := p.c.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, location: resp.Header.Get("Location"), body: string(b), header: resp.Header}
}

func (p *person) get(path string) page {
	p.t.Helper()
	req, _ := http.NewRequest("GET", p.base+path, nil)
	return p.do(req)
}

// post sends a form as a same-origin browser form does.
func (p *person) post(path string, form url.Values, headers ...string) page {
	p.t.Helper()
	req, _ := http.NewRequest("POST", p.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return p.do(req)
}

var (
	csrfField   = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	hiddenField = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
	jobLink     = regexp.MustCompile(`<td><a href="/jobs/(\d+)">#`)
	pagerLink   = regexp.MustCompile(`<a href="/jobs\?([^"]+)" rel="(prev|next)">`)
)

// form reads the hidden fields of the page's form (the confirmation).
func form(t *testing.T, body string) url.Values {
	t.Helper()
	v := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(body, -1) {
		v.Set(m[1], htmlUnescape(m[2]))
	}
	if v.Get("csrf") == "" {
		t.Fatalf("no csrf field on the page:\n%s", body)
	}
	return v
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&#43;", "+", "&#34;", `"`, "&lt;", "<", "&gt;", ">").Replace(s)
}

// confirm opens the confirmation page of query and posts its form.
func (p *person) confirm(query string) page {
	p.t.Helper()
	c := p.get("/confirm?" + query)
	if c.status != 200 {
		p.t.Fatalf("GET /confirm?%s = %d:\n%s", query, c.status, c.body)
	}
	return p.post("/act", form(p.t, c.body))
}
