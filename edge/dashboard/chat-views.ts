/**
 * The assistant's chat page: the person's conversations, the one open with its messages (the
 * tools the model called and their results, folded), a command waiting for confirmation shown
 * verbatim (a file change as its diff) with Allow and Deny, and the question form. Plain forms:
 * without script a question posts and the page comes back with the whole answer; chat.js
 * streams it instead.
 */
import type { Context } from "koa";
import { MessageRole, ToolCallStatus, type ChatMessage, type GetConversationResponse, type PendingToolCall } from "../../gen/outpost/chat/v1/chat_service_pb.js";
import { visibleLine } from "../../contract/one-line.ts";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { noticeOf, orgOf, render, type Viewer } from "./context.ts";
import { when } from "./format.ts";
import { postForm, selectField, textArea } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";

export const chatPath = (org: Organization | string, conversationId?: string) => orgPath(org, conversationId ? `/assistant/c/${conversationId}` : "/assistant");

const statusWords: Record<number, string> = {
  [ToolCallStatus.SUCCEEDED]: "done",
  [ToolCallStatus.FAILED]: "failed",
  [ToolCallStatus.REFUSED]: "refused",
  [ToolCallStatus.PENDING]: "waiting for your confirmation",
  [ToolCallStatus.DENIED]: "denied",
  [ToolCallStatus.RUNNING]: "interrupted",
};

function messageItem(m: ChatMessage): Html {
  if (m.role === MessageRole.USER) return html`<li class="chat-msg user"><p class="chat-who">You</p><div class="chat-text">${m.content}</div></li>`;
  if (m.role === MessageRole.TOOL) {
    if (m.toolStatus === ToolCallStatus.PENDING) return html``;
    return html`<li class="chat-msg tool"><details><summary>Result of ${m.toolName}: ${statusWords[m.toolStatus] ?? "unknown"}</summary><pre class="mono">${m.content}</pre></details></li>`;
  }
  return html`<li class="chat-msg assistant"><p class="chat-who">Assistant</p>${m.content ? html`<div class="chat-text">${m.content}</div>` : ""}${m.toolCalls.map(
    (c) => html`<details class="chat-call"><summary>Called ${c.name}</summary><pre class="mono">${c.arguments}</pre></details>`,
  )}</li>`;
}

/**
 * A diff's lines as a person reads them: each line's controls and bidirectional controls shown as
 * escapes (a file may hold any), so that what is shown is what changes, and `kind` to mark the
 * file names, hunks, and added and removed lines. chat.js renders the same lines from the event
 * chat.ts sends.
 */
export function diffLines(diff: string): Array<{ kind: "head" | "hunk" | "add" | "del" | "same"; text: string }> {
  let inHunk = false;
  return diff
    .replace(/\n$/, "")
    .split("\n")
    .map((line) => {
      inHunk ||= line.startsWith("@@");
      const kind = !inHunk ? "head" : line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "same";
      return { kind, text: visibleLine(line) };
    });
}

/** What the model proposes, as it will run: a command verbatim, or a file's change as its diff. */
function proposal(p: PendingToolCall): Html {
  const on = p.serverName ? html`<bdi>${p.serverName}</bdi>` : "the server";
  const edit = p.fileEdit;
  if (!edit) {
    return html`<h3 id="confirm-heading">Run this command on ${on}?</h3>
<p>The assistant wants to run exactly this on the server's console:</p>
<pre class="mono chat-command"><bdi>${p.command}</bdi></pre>`;
  }
  const lines = diffLines(edit.diff).map((l) => html`<span class="diff-${l.kind}">${l.text}</span>\n`);
  return html`<h3 id="confirm-heading">Change <bdi class="mono">${visibleLine(edit.path)}</bdi> on ${on}?</h3>
<p>The assistant wants to make exactly this change (${edit.linesAdded} lines added, ${edit.linesRemoved} removed). It is written only if the file is still as it was read.</p>
<pre class="mono chat-command chat-diff">${lines}</pre>`;
}

/**
 * The command or file change the model proposes, for a person to allow or deny. A command is
 * shown verbatim and isolated (`<bdi>`, as is the server's name), so right-to-left text in it
 * cannot reorder the words around it; the contract refuses bidirectional controls in a command, so
 * none can reorder it inside. A file's content may hold them: its diff shows them as escapes.
 */
function confirmBlock(v: Viewer, org: Organization, got: GetConversationResponse): Html {
  const p = got.pending;
  if (!p) return html``;
  return html`<section class="chat-confirm panel" aria-labelledby="confirm-heading" data-chat-pending>
${proposal(p)}
${postForm(
  `${chatPath(org, got.conversation!.id)}/confirm`,
  v.formToken,
  html`<input type="hidden" name="toolCallId" value="${p.toolCallId}">
<div class="actions"><button type="submit" class="btn danger" name="allow" value="yes">Allow</button> <button type="submit" class="btn ghost" name="allow" value="no">Deny</button></div>`,
  html` data-chat-confirm`,
)}
</section>`;
}

export interface ChatPageOptions {
  conversation?: GetConversationResponse;
  /** A refusal to show above the form (no-script posts). */
  problem?: string;
  /** What was typed, kept after a refusal. */
  typed?: string;
}

export async function chatPage(ctx: Context, v: Viewer, o: ChatPageOptions = {}, status = 200): Promise<void> {
  const org = orgOf(v, ctx.params.slug);
  const [list, servers] = await Promise.all([
    v.core.chat.listConversations({ organizationSlug: org.slug, limit: 50 }),
    v.core.servers.listServers({ organizationSlug: org.slug }),
  ]);
  const open = o.conversation;
  const openId = open?.conversation?.id;
  const banner = list.modelConfigured
    ? html``
    : html`<div class="alert" role="alert"><p><strong>No model is configured.</strong> The assistant cannot answer until this Outpost's operator sets <code>OCELOT_MODEL_URL</code> and <code>OCELOT_MODEL</code> (an OpenAI-compatible endpoint, such as a local Ollama). Past conversations can still be read.</p></div>`;
  const conversations = list.conversations.length
    ? html`<ul class="chat-list">${list.conversations.map(
        (c) =>
          html`<li><a href="${chatPath(org, c.id)}"${c.id === openId ? html` aria-current="page"` : ""}>${c.title}</a> <span class="muted">${when(c.updatedAt)}</span></li>`,
      )}</ul>`
    : html`<p class="muted">No conversations yet.</p>`;
  const scope = open
    ? html`<input type="hidden" name="conversationId" value="${openId}">`
    : servers.servers.length
      ? selectField({
          name: "serverId",
          label: "About",
          value: "",
          options: [{ value: "", label: "The whole organization" }, ...servers.servers.map((s) => ({ value: s.id, label: s.name }))],
        })
      : html``;
  render(
    ctx,
    v,
    {
      title: "Assistant",
      org,
      section: "assistant",
      notice: noticeOf(ctx),
      lede: html`Ask Ocelot about your servers and notes. It acts with your permissions, and asks before it runs a command. <a href="${orgPath(org, "/assistant/settings")}">Settings and usage</a>`,
      scripts: ["chat.js"],
      body: html`${banner}
<div class="chat">
<nav class="chat-side" aria-labelledby="conversations-heading">
<h2 id="conversations-heading">Conversations</h2>
<p><a class="btn small" href="${chatPath(org)}">New conversation</a></p>
${conversations}
</nav>
<section class="chat-main" aria-labelledby="chat-heading">
<h2 id="chat-heading">${open ? open.conversation!.title : "New conversation"}</h2>
${open ? postForm(`${chatPath(org, openId)}/delete`, v.formToken, html`<button type="submit" class="btn small ghost">Delete conversation</button>`, html` class="inline"`) : ""}
<ol class="chat-log" id="chat-log">${(open?.messages ?? []).map(messageItem)}</ol>
<div id="chat-confirm-slot">${open ? confirmBlock(v, org, open) : ""}</div>
<div id="chat-status" role="status" class="chat-status">${o.problem ? html`<p class="alert">${o.problem}</p>` : ""}</div>
${postForm(
  chatPath(org),
  v.formToken,
  html`${scope}
${textArea({ name: "content", label: "Your question", value: o.typed ?? "", rows: 3, required: true })}
<div class="actions"><button type="submit" class="btn">Send</button></div>`,
  html` data-chat-form`,
)}
</section>
</div>`,
    },
    status,
  );
}
