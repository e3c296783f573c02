import assert from "node:assert/strict";
import { normalizeRedirectUri, redirectUriMatches } from "../../../core/oauth/redirect-uris.ts";

const strict = { allowInsecure: false };
const insecure = { allowInsecure: true };

function normalized(raw: string, rules = strict): string {
  const result = normalizeRedirectUri(raw, rules);
  assert.ok(result.ok, `${raw}: ${result.ok ? "" : result.reason}`);
  return result.uri;
}

function refused(raw: string, reason: RegExp, rules = strict): void {
  const result = normalizeRedirectUri(raw, rules);
  assert.equal(result.ok, false, `${raw} should be refused, got ${result.ok && result.uri}`);
  assert.match((result as { reason: string }).reason, reason, raw);
}

describe("oauth: redirect URI rules and normalization", () => {
  describe("normalizeRedirectUri", () => {
    it("keeps an https URL as it is", () => {
      for (const uri of ["https://app.example.com/callback", "https://app.example.com/cb/", "https://app.example.com:8443/a?x=1&y=2"]) {
        assert.equal(normalized(uri), uri);
      }
    });

    it("lower-cases the scheme and host, but not the path or query", () => {
      assert.equal(normalized("HTTPS://App.Example.COM/CallBack?State=Keep"), "https://app.example.com/CallBack?State=Keep");
    });

    it("drops a default port, keeps any other", () => {
      assert.equal(normalized("https://app.example.com:443/cb"), "https://app.example.com/cb");
      assert.equal(normalized("http://localhost:80/cb"), "http://localhost/cb");
      assert.equal(normalized("https://app.example.com:80/cb"), "https://app.example.com:80/cb");
      assert.equal(normalized("http://localhost:443/cb"), "http://localhost:443/cb");
      assert.equal(normalized("http://localhost:3000/cb"), "http://localhost:3000/cb");
    });

    it("keeps the path and query exactly: no decoding, re-encoding or dot segments; the trailing slash stays", () => {
      for (const tail of ["/cb/", "/cb", "/a/../b", "/a/./b", "/%7Euser/cb", "/%7euser", "/cb?", "/cb?a=%20b&c", "/cb?b=2&a=1", "//double"]) {
        assert.equal(normalized(`https://app.example.com${tail}`), `https://app.example.com${tail}`, tail);
      }
    });

    it("gives an empty path its one form, /", () => {
      assert.equal(normalized("https://app.example.com"), "https://app.example.com/");
      assert.equal(normalized("https://app.example.com?x=1"), "https://app.example.com/?x=1");
    });

    it("requires https except on loopback hosts", () => {
      refused("http://app.example.com/cb", /^must use https \(or a loopback host\)$/);
      refused("http://127.0.0.2/cb", /https/);
      refused("http://localhost.example.com/cb", /https/);
      for (const uri of ["http://localhost/cb", "http://localhost:8080/cb", "http://127.0.0.1:5000/cb", "http://[::1]:5000/cb", "http://LOCALHOST/cb"]) {
        assert.ok(normalizeRedirectUri(uri, strict).ok, uri);
      }
      assert.equal(normalized("http://[0:0:0:0:0:0:0:1]/cb"), "http://[::1]/cb");
    });

    it("allows http on any host when insecure redirect URIs are allowed, but never another scheme", () => {
      assert.equal(normalized("http://dev.example.test:8080/cb", insecure), "http://dev.example.test:8080/cb");
      refused("myapp://callback", /custom schemes/, insecure);
    });

    it("refuses custom schemes, relative URLs and URLs without a host", () => {
      refused("com.example.app:/callback", /custom schemes/);
      refused("myapp://callback", /custom schemes/);
      refused("javascript:alert(1)", /custom schemes/);
      refused("ftp://example.com/cb", /custom schemes/);
      refused("/callback", /absolute URL/);
      refused("app.example.com/callback", /absolute URL/);
      refused("https:/callback", /host/);
      refused("https:///callback", /host/);
      refused("", /absolute URL/);
    });

    it("refuses a fragment, even an empty one", () => {
      refused("https://app.example.com/cb#frag", /fragment/);
      refused("https://app.example.com/cb#", /fragment/);
    });

    it("refuses userinfo", () => {
      refused("https://user:pass@app.example.com/cb", /user name or password/);
      refused("https://user@app.example.com/cb", /user name or password/);
    });

    it("refuses characters a URL cannot hold, bad percent-encodings, bad hosts and ports", () => {
      refused("https://app.example.com/call back", /character/);
      refused("https://app.example.com/cb\\x", /character/);
      refused("https://app.example.com/é", /character/);
      refused("https://exämple.com/cb", /character/);
      refused("https://app.example.com/cb?%zz", /%/);
      refused("https://app.example.com:99999/cb", /host or port/);
      refused("https://app.example.com:/cb", /host or port/);
      refused("https://app.example.com:x/cb", /host or port/);
      refused("https://[::1/cb", /host or port/);
    });

    it("refuses URIs over 2048 characters", () => {
      refused(`https://app.example.com/${"a".repeat(2048)}`, /2048/);
    });
  });

  describe("redirectUriMatches", () => {
    const saved = ["https://app.example.com/callback", "https://app.example.com/cb/", "http://localhost:3000/cb?x=1"];

    it("matches a request equal to a saved URI after normalizing it", () => {
      assert.ok(redirectUriMatches(saved, "https://app.example.com/callback"));
      assert.ok(redirectUriMatches(saved, "HTTPS://APP.example.com:443/callback"));
      assert.ok(redirectUriMatches(saved, "http://LOCALHOST:3000/cb?x=1"));
    });

    it("matches nothing looser: trailing slash, case of the path, query, port, prefixes, fragments", () => {
      for (const requested of [
        "https://app.example.com/callback/",
        "https://app.example.com/cb",
        "https://app.example.com/Callback",
        "https://app.example.com/callback?x=1",
        "https://app.example.com/callback#",
        "https://app.example.com:8443/callback",
        "https://app.example.com/callbackx",
        "https://app.example.com/callback/../callback",
        "https://app.example.com/%63allback",
        "http://app.example.com/callback",
        "http://localhost:3000/cb?x=1&y=2",
        "not a url",
      ]) {
        assert.equal(redirectUriMatches(saved, requested), false, requested);
      }
    });
  });
});
