/**
 * What a caller reads when the contract refuses a value: words naming the field and what it must
 * be, never a regular expression. Walks every rule of every message a service takes, so a pattern
 * added later without its words (`pattern_message`) or a CEL rule without a message fails here.
 * Also: the contract's `one_line` rule and contract/one-line.ts, which core and the agent use for
 * what they print, refuse exactly the same characters.
 */
import assert from "node:assert/strict";
import { create, getExtension, getOption, hasOption, isFieldSet, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";
import { ConnectError } from "@connectrpc/connect";
import { field as fieldRules, message as messageRules, predefined, StringRulesSchema, type FieldRules } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { services } from "../../../contract/services.ts";
import { createContractValidator, patternWords } from "../../../contract/validation.ts";
import { notOnOneLine } from "../../../contract/one-line.ts";
import { one_line } from "../../../gen/outpost/validate/v1/rules_pb.js";
import { CreateServerRequestSchema, ExecuteConsoleCommandRequestSchema } from "../../../gen/outpost/servers/v1/servers_service_pb.js";
import { createMessageCheck } from "../../../core/interceptors/validate-interceptor.ts";

/** Every message a service of the contract takes, nested ones included. */
function requestMessages(): DescMessage[] {
  const found = new Map<string, DescMessage>();
  const visit = (desc: DescMessage) => {
    if (found.has(desc.typeName) || desc.typeName.startsWith("google.protobuf.")) return;
    found.set(desc.typeName, desc);
    for (const field of desc.fields) if (field.message) visit(field.message);
  };
  for (const service of services) for (const method of service.methods) visit(method.input);
  return [...found.values()];
}

/** The string rules of a field, or of its items (lists), whichever it has. */
function stringRules(rules: FieldRules) {
  if (rules.type.case === "string") return rules.type.value;
  if (rules.type.case === "repeated" && rules.type.value.items?.type.case === "string") return rules.type.value.items.type.value;
  return undefined;
}

const patternFields = requestMessages().flatMap((desc) =>
  desc.fields.flatMap((field) => {
    const rules = hasOption(field, fieldRules) ? stringRules(getOption(field, fieldRules)) : undefined;
    return rules && isFieldSet(rules, StringRulesSchema.field.pattern) ? [{ field, pattern: rules.pattern }] : [];
  }),
);

/** What a regular expression is made of, and words are not. */
const regexSyntax = /[\^$\\[\]{}()*+?|`]/;

/** `field` of a fresh `desc` holding `value` (as its one item, for a list). */
function withValue(desc: DescMessage, field: DescField, value: string) {
  const message = create(desc);
  const r = reflect(desc, message);
  if (field.fieldKind === "list") r.get(field).add(value);
  else r.set(field, value);
  return message;
}

describe("validation messages: words, never a regular expression", () => {
  it("finds the contract's patterns (the walk reaches them)", () => {
    const names = patternFields.map(({ field }) => `${field.parent.typeName}.${field.name}`);
    assert.ok(names.includes("outpost.servers.v1.ExecuteConsoleCommandRequest.command"));
    assert.ok(names.includes("outpost.organizations.v1.CreateOrganizationRequest.slug"));
    assert.ok(names.includes("outpost.knowledge.v1.NoteSpec.title"), "nested messages too");
    assert.ok(patternFields.length >= 40, `${patternFields.length} patterns`);
  });

  it("gives every pattern rule its words", () => {
    for (const { field, pattern } of patternFields) {
      const words = patternWords(field);
      assert.notEqual(words, "is not in the expected form", `${field.parent.typeName}.${field.name} (${pattern}) has no pattern_message`);
      assert.match(words, /^must /, `${field.parent.typeName}.${field.name}: "${words}"`);
      assert.doesNotMatch(words, regexSyntax, `${field.parent.typeName}.${field.name}: "${words}" reads like a pattern`);
    }
  });

  it("refuses a value that misses a pattern with the field's name and those words, for every pattern", () => {
    const check = createMessageCheck();
    for (const { field } of patternFields) {
      // A single space matches none of the patterns (each wants something besides spaces).
      const message = withValue(field.parent, field, " ");
      let refused: ConnectError | undefined;
      try {
        check(field.parent, message);
      } catch (error) {
        refused = error as ConnectError;
      }
      assert.ok(refused instanceof ConnectError, `${field.parent.typeName}.${field.name} took " "`);
      const name = field.fieldKind === "list" ? `${field.name}[0]` : field.name;
      assert.ok(refused.rawMessage.includes(`${name}: ${patternWords(field)}`), `${field.parent.typeName}.${field.name}: ${refused.rawMessage}`);
      assert.doesNotMatch(refused.rawMessage, /regex|`/, refused.rawMessage);
    }
  });

  it("gives every CEL rule a message, field, message and predefined alike", () => {
    const predefinedRules = getOption(one_line, predefined).cel;
    assert.ok(predefinedRules.length > 0);
    const all = [...predefinedRules];
    for (const desc of requestMessages()) {
      if (hasOption(desc, messageRules)) {
        const rules = getOption(desc, messageRules);
        assert.deepEqual(rules.celExpression, [], `${desc.typeName}: a CEL expression without a message`);
        all.push(...rules.cel);
      }
      for (const field of desc.fields) {
        if (!hasOption(field, fieldRules)) continue;
        const rules = getOption(field, fieldRules);
        assert.deepEqual(rules.celExpression, [], `${desc.typeName}.${field.name}: a CEL expression without a message`);
        all.push(...rules.cel);
      }
    }
    for (const rule of all) assert.ok(rule.message.trim(), `the CEL rule ${rule.id} has no message`);
  });

  it("says what the console command must be in words (the newcomer's newline)", () => {
    const check = createMessageCheck();
    const desc = ExecuteConsoleCommandRequestSchema;
    const serverId = "123e4567-e89b-12d3-a456-426614174000";
    assert.throws(
      () => check(desc, create(desc, { serverId, command: "say hi\nop me" })),
      (error: ConnectError) => error.rawMessage === "command: must be one line, without control characters or bidirectional text controls",
    );
    assert.throws(
      () => check(desc, create(desc, { serverId, command: "   " })),
      (error: ConnectError) => error.rawMessage === "command: must hold something besides spaces",
    );
  });
});

describe("one line: every display name, title and console command", () => {
  it("carries the one_line rule on every name and title a request sets, and on the console command", () => {
    const named = requestMessages().flatMap((desc) => desc.fields.filter((f) => /(^|_)(name|title)$/.test(f.name) || f.name === "command"));
    const without = named.filter((field) => {
      const rules = hasOption(field, fieldRules) ? stringRules(getOption(field, fieldRules)) : undefined;
      return !rules || !getExtension(rules, one_line);
    });
    assert.deepEqual(
      without.map((f) => `${f.parent.typeName}.${f.name}`),
      [],
    );
    assert.ok(named.length >= 20, `${named.length} fields`);
  });
});

describe("one line: the contract's rule and contract/one-line.ts refuse the same characters", () => {
  it("agrees on every code point of the Basic Multilingual Plane's first 12,288 and on astral ones", () => {
    const validator = createContractValidator();
    const probe = (text: string) =>
      validator.validate(CreateServerRequestSchema, create(CreateServerRequestSchema, { organizationSlug: "acme", name: `a${text}b`, game: 1 })).kind === "valid";
    const codePoints = [...Array.from({ length: 0x3000 }, (_, i) => i), 0xfeff, 0xfff9, 0x1f600, 0xe0001, 0x10ffff];
    const refused: number[] = [];
    for (const cp of codePoints) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const text = String.fromCodePoint(cp);
      const byRule = !probe(text);
      assert.equal(notOnOneLine.test(text), byRule, `U+${cp.toString(16)}: the rule ${byRule ? "refuses" : "takes"} it`);
      if (byRule) refused.push(cp);
    }
    // C0, DEL and C1, the marks, the separators, embeddings and overrides, isolates.
    assert.equal(refused.length, 32 + 33 + 3 + 2 + 5 + 4);
  });
});
