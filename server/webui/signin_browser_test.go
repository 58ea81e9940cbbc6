package webui_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"flrh.dev/flrh/idtoken"
	"flrh.dev/flrh/internal/testidp"
	"flrh.dev/flrh/server"
)

// Sign-in through an identity provider, in the browser: the UI of a
// server with sign-in and no token file offers it; the person is sent to
// the provider and back, the UI exchanges the code and speaks for them
// with the roles their groups map to, on the page they left, with no code
// left in the address, and stays signed in past the token's expiry; a
// code this tab did not ask for, and the provider's refusal, are said and
// change nothing; signing out ends the sign-in at the provider too.
func TestBrowserSignIn(t *testing.T) {
	w := newWorld(t)
	idp := testidp.NewServer(t, testidp.MustSigner(t, "EdDSA", "k1"))
	idp.SignInAs("finance-lead", "payments-approvers")
	// Tokens living 65 s: the page trades its refresh token for the next
	// 5 s after signing in (a minute before expiry).
	idp.SetTokenLife(65 * time.Second)
	cfg, err := server.ParseIdentityConfig([]byte(`{"issuer":"`+idp.URL+`","audience":"flrh-ui","actor_claim":"preferred_username",
 "roles_claim":"/realm_access/roles","roles":{"payments-approvers":["approver","operator"]},"login":{"client_id":"flrh-ui","scope":"openid profile"}}`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id, err := server.NewIdentity(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sso := w.serve(server.Config{Identity: id})
	w.start("big-sso", 900, "alice", "damaged item")

	w.run("sign in through the provider",
		chromedp.Navigate(sso.URL+"/ui/#/inbox"),
		waitText("#whoami", "token needed"),
		chromedp.WaitVisible(chromedp.CSS("#sign-in")),
		chromedp.Click(chromedp.CSS("#sign-in")),
		waitText("#whoami", "finance-lead (approver, operator)"),
		waitText("#status", "signed in as finance-lead"),
		waitText("main", "big-sso"))
	if loc := value(w, "location", chromedp.Location()); loc != sso.URL+"/ui/#/inbox" {
		t.Fatalf("after sign-in the address is %s", loc)
	}
	if idp.Exchanges() != 1 {
		t.Fatalf("%d codes exchanged", idp.Exchanges())
	}
	token := value(w, "the token kept", chromedp.Evaluate[string](`sessionStorage.getItem('flrh.token') || ''`))
	req, _ := http.NewRequest("GET", sso.URL+"/v1/whoami", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the token the UI keeps: %v %v", resp, err)
	}
	resp.Body.Close()
	if flow := value(w, "the sign-in's verifier", chromedp.Evaluate[string](`sessionStorage.getItem('flrh.signin') || ''`)); flow != "" {
		t.Fatalf("the verifier outlived the sign-in: %s", flow)
	}
	w.checkA11y("signed in through the provider")
	w.shot("20-signed-in")

	// Before the token expires the page gets the next with the refresh
	// token, and goes on speaking for the same person.
	deadline := time.Now().Add(30 * time.Second)
	for value(w, "the token kept", chromedp.Evaluate[string](`sessionStorage.getItem('flrh.token') || ''`)) == token {
		if time.Now().After(deadline) {
			t.Fatalf("the token was not renewed (%d refreshes)", idp.Refreshes())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if idp.Refreshes() < 1 {
		t.Fatal("a new token without a refresh")
	}
	w.run("still signed in after the refresh", waitText("#whoami", "finance-lead (approver, operator)"))

	// A code this tab did not ask for: refused before it reaches the
	// server, the person still signed in as before.
	w.run("a code pushed on the person",
		chromedp.Navigate(sso.URL+"/ui/?code=someone-elses&state=forged#/runs"),
		waitText("#status", "sign-in refused: it was not begun in this tab"),
		waitText("#whoami", "finance-lead"))
	if loc := value(w, "location", chromedp.Location()); strings.Contains(loc, "code=") || !strings.HasSuffix(loc, "/ui/#/runs") {
		t.Fatalf("the address kept the code: %s", loc)
	}

	// The provider says no.
	idp.RefuseWith("access_denied")
	w.run("the provider refuses",
		chromedp.Click(chromedp.CSS("#sign-in")),
		waitText("#status", "the identity provider refused the sign-in: access_denied: the person said no"))
	if idp.Exchanges() != 1 {
		t.Fatalf("%d codes exchanged", idp.Exchanges())
	}

	// Signing out ends the sign-in at the provider too, and comes back
	// here with nothing kept.
	w.run("sign out",
		chromedp.WaitVisible(chromedp.CSS("#sign-out")),
		chromedp.Click(chromedp.CSS("#sign-out")),
		waitText("#whoami", "token needed"))
	outs := idp.Logouts()
	if len(outs) != 1 || outs[0].Get("post_logout_redirect_uri") != sso.URL+"/ui/" || outs[0].Get("client_id") != "flrh-ui" {
		t.Fatalf("signing out at the provider: %v", outs)
	}
	// The hint is the ID token the tab held (renewed every few seconds
	// here, so read from the hint itself): the person's.
	hint, err := idtoken.Verifier{Issuer: idp.URL, Audience: "flrh-ui", Leeway: time.Minute}.Verify(outs[0].Get("id_token_hint"), id.Keys(), time.Now())
	if err != nil || hint.Claims["preferred_username"] != "finance-lead" {
		t.Fatalf("the hint: %+v %v", hint, err)
	}
	if kept := value(w, "what the tab keeps", chromedp.Evaluate[string](`['flrh.token','flrh.refresh','flrh.expires','flrh.signedin'].map(k => sessionStorage.getItem(k) || '').join('')`)); kept != "" {
		t.Fatalf("the tab still keeps %q after signing out", kept)
	}
	if hidden := value(w, "the sign-out button", chromedp.Evaluate[bool](`document.getElementById('sign-out').hidden`)); !hidden {
		t.Fatal("the sign-out button is offered after signing out")
	}

	w.mu.Lock()
	errs := w.errors
	w.mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("the pages raised errors:\n%s", strings.Join(errs, "\n"))
	}
}
