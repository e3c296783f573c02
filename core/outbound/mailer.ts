/**
 * Email through the deployment's own SMTP server (SMTP_URL), with nodemailer. The server is the
 * operator's, not an address an organization chose, so no address checks apply; the recipients
 * are checked by the contract. Like the HTTP sender, it never throws: every end is an outcome.
 *
 * What a message says embeds names that others chose (an organization's, a server's, a rule's),
 * some stored before the contract refused control characters in them: the subject is sent as one
 * line and each line of the text as itself, with every control or bidirectional character shown
 * as an escape (contract/one-line.ts), so a CR in a name never splits a line or starts a header.
 */
import { createTransport } from "nodemailer";
import { visibleLine } from "../../contract/one-line.ts";

export interface MailConfig {
  /** smtp://user:pass@host:587 (STARTTLS when offered) or smtps://…:465. */
  url: string;
  /** The From header, e.g. `Outpost <outpost@example.com>`. */
  from: string;
}

export interface MailMessage {
  to: readonly string[];
  /** One line. */
  subject: string;
  /** Lines separated by "\n". */
  text: string;
}

/** The subject and text as they are sent: each line shows what it holds (see above). */
export function mailSafe(message: Pick<MailMessage, "subject" | "text">): { subject: string; text: string } {
  return { subject: visibleLine(message.subject), text: message.text.split("\n").map(visibleLine).join("\n") };
}

export interface MailOutcome {
  ok: boolean;
  /** For a person: why it failed; "" when ok. */
  error: string;
  /** The SMTP server's last reply (e.g. "250 OK: queued"), when it came that far. */
  response: string;
  durationMs: number;
}

export interface Mailer {
  /** False when SMTP_URL is not set: nothing can be sent. */
  readonly configured: boolean;
  send(message: MailMessage): Promise<MailOutcome>;
}

/** A mailer on `config`'s server, or one that says email is not configured. */
export function createMailer(config: MailConfig | undefined, timeoutMs = 10_000): Mailer {
  if (!config) {
    return {
      configured: false,
      send: async () => ({ ok: false, error: "this Outpost has no SMTP server configured (SMTP_URL)", response: "", durationMs: 0 }),
    };
  }
  const transport = createTransport({
    url: config.url,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  } as Parameters<typeof createTransport>[0]);
  return {
    configured: true,
    async send(message) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      try {
        const info = await transport.sendMail({ from: config.from, to: [...message.to], ...mailSafe(message) });
        return { ok: true, error: "", response: String(info.response ?? ""), durationMs: elapsed() };
      } catch (error) {
        const e = error as { code?: string; response?: string; message?: string };
        const problem = e.response ? `the SMTP server refused it: ${e.response}` : `the SMTP server could not be reached (${e.code ?? e.message ?? "unknown"})`;
        return { ok: false, error: problem, response: e.response ?? "", durationMs: elapsed() };
      }
    },
  };
}
