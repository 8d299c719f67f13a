// Package compat drives a real herald through the official Go SDK (resend-go v3), pointed at
// it by RESEND_BASE_URL, the way the Node, Python and Rust suites do with theirs.
//
// resend-go turns every non-2xx answer but 429 into errors.New("[ERROR]: " + message) (and a
// 429 into *resend.RateLimitError): the status and Resend's error name are not kept. So each
// client here has a recording transport, and refused() checks the SDK's error against the
// answer it was made from: the error text is exactly "[ERROR]: " + the body's `message`, and
// the body's status and `name` are the expected ones.
package compat

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resend/resend-go/v3"
)

var (
	baseURL = strings.TrimRight(os.Getenv("RESEND_BASE_URL"), "/")
	apiKey  = os.Getenv("RESEND_API_KEY")

	uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	// Resend's resource timestamps: `2023-04-03 22:13:42.674981+00`.
	timestampRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?\+00$`)
)

func TestMain(m *testing.M) {
	if baseURL == "" || apiKey == "" {
		fmt.Fprintln(os.Stderr, "RESEND_BASE_URL and RESEND_API_KEY must be set (compat/go/run test)")
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// exchange is one request and its answer as they went over the wire.
type exchange struct {
	Method     string
	Path       string
	ReqHeader  http.Header
	ReqBody    []byte
	Status     int
	RespHeader http.Header
	RespBody   []byte
}

// recorder is an http.RoundTripper that keeps the last exchange.
type recorder struct {
	mu   sync.Mutex
	last *exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	ex := &exchange{Method: req.Method, Path: req.URL.RequestURI(), ReqHeader: req.Header.Clone()}
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body.Close()
		ex.ReqBody = body
		// ContentLength stays as the SDK left it: resend-go sets a body without a length,
		// so it goes chunked, as it does without the recorder.
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	ex.Status, ex.RespHeader, ex.RespBody = resp.StatusCode, resp.Header.Clone(), body
	r.mu.Lock()
	r.last = ex
	r.mu.Unlock()
	return resp, nil
}

// client is an SDK client whose exchanges are recorded.
type client struct {
	*resend.Client
	rec *recorder
}

// newClient is the SDK's client for `key`, on the base URL the SDK read from RESEND_BASE_URL.
func newClient(t *testing.T, key string) *client {
	t.Helper()
	rec := &recorder{}
	c := resend.NewCustomClient(&http.Client{Transport: rec, Timeout: 60 * time.Second}, key)
	if got := strings.TrimRight(c.BaseURL.String(), "/"); got != baseURL {
		t.Fatalf("the SDK took its base URL %q, not RESEND_BASE_URL %q", got, baseURL)
	}
	return &client{c, rec}
}

// operator is a client with the suite's operator key.
func operator(t *testing.T) *client { return newClient(t, apiKey) }

// last is the client's last exchange.
func (c *client) last(t *testing.T) *exchange {
	t.Helper()
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	if c.rec.last == nil {
		t.Fatal("no request was made")
	}
	return c.rec.last
}

// lastJSON decodes the client's last answer's body as JSON.
func (c *client) lastJSON(t *testing.T) map[string]any {
	t.Helper()
	var out map[string]any
	ex := c.last(t)
	if err := json.Unmarshal(ex.RespBody, &out); err != nil {
		t.Fatalf("%s %s answered %d with no JSON object: %v: %s", ex.Method, ex.Path, ex.Status, err, ex.RespBody)
	}
	return out
}

// lastRequestJSON decodes the body the SDK sent in its last request.
func (c *client) lastRequestJSON(t *testing.T) any {
	t.Helper()
	var out any
	ex := c.last(t)
	if err := json.Unmarshal(ex.ReqBody, &out); err != nil {
		t.Fatalf("%s %s sent no JSON: %v: %q", ex.Method, ex.Path, err, ex.ReqBody)
	}
	return out
}

// status checks the status of the client's last answer.
func (c *client) status(t *testing.T, want int) {
	t.Helper()
	if ex := c.last(t); ex.Status != want {
		t.Fatalf("%s %s answered %d, want %d: %s", ex.Method, ex.Path, ex.Status, want, ex.RespBody)
	}
}

// refused checks that err is the SDK's error for a Resend error answer with this status
// and name, and returns its message.
func (c *client) refused(t *testing.T, err error, status int, name string) string {
	t.Helper()
	if err == nil {
		ex := c.last(t)
		t.Fatalf("%s %s succeeded (%d %s); want %d %s", ex.Method, ex.Path, ex.Status, ex.RespBody, status, name)
	}
	ex := c.last(t)
	if ex.Status != status {
		t.Fatalf("%s %s answered %d, want %d %s: %s (SDK error %q)", ex.Method, ex.Path, ex.Status, status, name, ex.RespBody, err)
	}
	if ct := ex.RespHeader.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %s: error answered as %q, not JSON", ex.Method, ex.Path, ct)
	}
	var body struct {
		StatusCode int    `json:"statusCode"`
		Name       string `json:"name"`
		Message    string `json:"message"`
	}
	if e := json.Unmarshal(ex.RespBody, &body); e != nil {
		t.Fatalf("%s %s: error body is not JSON: %v: %s", ex.Method, ex.Path, e, ex.RespBody)
	}
	if body.StatusCode != status || body.Name != name || body.Message == "" {
		t.Fatalf("%s %s: error body %s, want statusCode %d, name %q and a message", ex.Method, ex.Path, ex.RespBody, status, name)
	}
	if errors.Is(err, resend.ErrRateLimit) {
		t.Fatalf("%s %s: the SDK took a %d for a rate limit: %v", ex.Method, ex.Path, status, err)
	}
	if want := "[ERROR]: " + body.Message; err.Error() != want {
		t.Fatalf("%s %s: SDK error %q, want %q", ex.Method, ex.Path, err.Error(), want)
	}
	return body.Message
}

// must fails the test when an SDK call failed.
func (c *client) must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		msg := ""
		if c.rec.last != nil {
			msg = fmt.Sprintf(" (%s %s answered %d: %s)", c.rec.last.Method, c.rec.last.Path, c.rec.last.Status, c.rec.last.RespBody)
		}
		t.Fatalf("SDK call failed: %v%s", err, msg)
	}
}

// rawResponse is an answer to a request made without the SDK.
type rawResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r rawResponse) json(t *testing.T) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatalf("answer %d is not a JSON object: %v: %s", r.Status, err, r.Body)
	}
	return out
}

// raw makes a request without the SDK (key "" sends no Authorization).
func raw(t *testing.T, method, path, key string, body any) rawResponse {
	t.Helper()
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, baseURL+path, reader)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "herald-compat-go")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rawResponse{resp.StatusCode, resp.Header, data}
}

func token(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// uniqueDomain is a domain name no other test (of any suite) uses.
func uniqueDomain(label string) string {
	return fmt.Sprintf("go-%s-%s.compat.herald.test", label, token(5))
}

// uniqueAddress is an address no other test uses.
func uniqueAddress(label string) string {
	return fmt.Sprintf("go-%s-%s@compat.herald.test", label, token(5))
}

func keyName(label string) string { return fmt.Sprintf("go-%s-%s", label, token(4)) }

func newUUID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// teamClient is a client with the first key of a new team of its own (`POST /teams` with
// the operator's key), so that lists show only the test's own items.
func teamClient(t *testing.T, label string) *client {
	t.Helper()
	resp := raw(t, "POST", "/teams", apiKey, map[string]any{"name": keyName(label)})
	if resp.Status != 201 {
		t.Fatalf("POST /teams answered %d: %s", resp.Status, resp.Body)
	}
	var body struct {
		ApiKey struct {
			Token string `json:"token"`
		} `json:"api_key"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil || body.ApiKey.Token == "" {
		t.Fatalf("POST /teams: no api_key.token in %s", resp.Body)
	}
	return newClient(t, body.ApiKey.Token)
}

// verifyWithoutDNS marks a domain verified without DNS (`{"skip_dns": true}`, which only the
// operator's key may send; the SDK's Domains.Verify sends no body).
func verifyWithoutDNS(t *testing.T, domainID string) {
	t.Helper()
	resp := raw(t, "POST", "/domains/"+domainID+"/verify", apiKey, map[string]any{"skip_dns": true})
	if resp.Status != 200 {
		t.Fatalf("skip_dns verify answered %d: %s", resp.Status, resp.Body)
	}
	body := resp.json(t)
	if body["object"] != "domain" || body["id"] != domainID {
		t.Fatalf("skip_dns verify answered %s", resp.Body)
	}
}

var (
	senderOnce   sync.Once
	senderName   string
	senderID     string
	senderFailed string
)

// sendingDomain is a verified domain of the operator's team (made once per run): its name and id.
func sendingDomain(t *testing.T) (string, string) {
	t.Helper()
	senderOnce.Do(func() {
		c := resend.NewClient(apiKey)
		name := uniqueDomain("sender")
		created, err := c.Domains.Create(&resend.CreateDomainRequest{Name: name})
		if err != nil {
			senderFailed = err.Error()
			return
		}
		resp := raw(t, "POST", "/domains/"+created.Id+"/verify", apiKey, map[string]any{"skip_dns": true})
		if resp.Status != 200 {
			senderFailed = fmt.Sprintf("skip_dns verify answered %d: %s", resp.Status, resp.Body)
			return
		}
		senderName, senderID = name, created.Id
	})
	if senderFailed != "" {
		t.Fatalf("the sending domain could not be made: %s", senderFailed)
	}
	return senderName, senderID
}

// eventually polls `check` every 100 ms until it returns true, for at most `within`.
func eventually(t *testing.T, within time.Duration, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// parseTimestamp parses a Resend-style timestamp (`2026-11-22 09:00:00.123+00`) or an
// ISO 8601 one.
func parseTimestamp(t *testing.T, text string) time.Time {
	t.Helper()
	s := strings.Replace(text, " ", "T", 1)
	if strings.HasSuffix(s, "+00") {
		s += ":00"
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("not a timestamp: %q", text)
	}
	return at
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !equalJSON(got, want) {
		t.Fatalf("%s: got %#v, want %#v", what, got, want)
	}
}

// equalJSON compares two values by their JSON encodings (so []string{} and nil differ,
// and map key order does not matter).
func equalJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var va, vb any
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}

func ptr[T any](v T) *T { return &v }

func matches(t *testing.T, what string, re *regexp.Regexp, s string) {
	t.Helper()
	if !re.MatchString(s) {
		t.Fatalf("%s: %q does not match %s", what, s, re)
	}
}

func ctx() context.Context { return context.Background() }
