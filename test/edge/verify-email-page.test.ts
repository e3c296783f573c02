import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { startSmtpReceiver, verificationLinkTo, type SmtpReceiver } from "../support/receivers.ts";

/** The page a verification link opens on ACCOUNT_BASE_URL: opening it changes nothing; its button uses the link once. */
describe("edge: the email verification page", () => {
  let t: TestOutpost;
  let smtp: SmtpReceiver;
  const origin = "http://localhost:3000";

  before(async () => {
    smtp = await startSmtpReceiver();
    t = await startTestOutpost({ SMTP_URL: smtp.url });
  });
  after(async () => {
    await t?.close();
    await smtp?.close();
  });

  /** GET the page (its form token and cookie), then POST its form with `token`. */
  async function confirm(token: string): Promise<{ status: number; text: string }> {
    const page = await fetch(`${t.baseUrl}/verify-email?token=${token}`);
    assert.equal(page.status, 200);
    const cookie = page.headers.getSetCookie()[0].split(";")[0];
    const formToken = /name="form_token" value="([^"]+)"/.exec(await page.text())![1];
    const res = await fetch(`${t.baseUrl}/verify-email`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin, cookie },
      body: new URLSearchParams({ token, form_token: formToken }),
      redirect: "manual",
    });
    return { status: res.status, text: await res.text() };
  }

  it("confirms the address with the button, once; a bad link is a page saying so", async () => {
    const signUp = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email: "page.verify@example.com", password: "a long password", name: "P" }),
    });
    assert.equal(signUp.status, 201);
    const { token } = verificationLinkTo(smtp, "page.verify@example.com")!;
    const opened = await fetch(`${t.baseUrl}/verify-email?token=${token}`);
    assert.match(await opened.text(), /Confirm my address/);

    const first = await confirm(token);
    assert.equal(first.status, 200);
    assert.match(first.text, /page\.verify@example\.com<\/strong> is verified/);
    const second = await confirm(token);
    assert.equal(second.status, 409);
    assert.match(second.text, /already been used/);
    const unknown = await confirm(`opv_${"y".repeat(40)}`);
    assert.equal(unknown.status, 404);
    assert.match(unknown.text, /not valid/);

    const forged = await fetch(`${t.baseUrl}/verify-email`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin },
      body: new URLSearchParams({ token }),
    });
    assert.equal(forged.status, 403, "no form token: refused");
  });
});
