/**
 * The yardstick for the token endpoint, rebuilt so it can be measured on the machine at
 * hand: a minimal Koa endpoint on PostgreSQL doing one atomic consume of a code, one insert of an
 * access token and one RS256 signature (jose over WebCrypto, off the event loop). No client
 * authentication, PKCE, validation, logging or activity: what any token endpoint cannot do without.
 * Forked by bench/reference-token.ts with the database URL as its argument; sends `{port}` once
 * listening and stops when the parent disconnects.
 */
import { createHash, randomBytes } from "node:crypto";
import Koa from "koa";
import pg from "pg";
import { SignJWT, generateKeyPair } from "jose";

const pool = new pg.Pool({ connectionString: process.argv[2], max: 10 });
const { privateKey } = await generateKeyPair("RS256");
const sha256 = (value: string) => createHash("sha256").update(value).digest("hex");

const app = new Koa();
app.use(async (ctx) => {
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
  const code = new URLSearchParams(Buffer.concat(chunks).toString()).get("code") ?? "";
  const { rows } = await pool.query<{ id: string; subject: string; client_id: string }>(
    "update codes set consumed_at = now() where code_hash = $1 and consumed_at is null returning id, subject, client_id",
    [sha256(code)],
  );
  if (!rows.length) {
    ctx.status = 400;
    ctx.body = { error: "invalid_grant" };
    return;
  }
  const accessToken = randomBytes(32).toString("base64url");
  await pool.query("insert into tokens (token_hash, code_id, expires_at) values ($1, $2, now() + interval '15 minutes')", [sha256(accessToken), rows[0].id]);
  const idToken = await new SignJWT({ game: "minecraft" })
    .setProtectedHeader({ alg: "RS256", kid: "reference" })
    .setIssuer("http://127.0.0.1")
    .setSubject(rows[0].subject)
    .setAudience(rows[0].client_id)
    .setIssuedAt()
    .setExpirationTime("10m")
    .sign(privateKey);
  ctx.set("Cache-Control", "no-store");
  ctx.body = { access_token: accessToken, id_token: idToken, token_type: "Bearer", expires_in: 900 };
});
const server = app.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as { port: number }).port }));
process.on("disconnect", () => {
  server.close();
  server.closeAllConnections();
  void pool.end();
});
