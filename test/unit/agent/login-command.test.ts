import assert from "node:assert/strict";
import { formatLoginCode, parseLoginCommand } from "../../../contract/login-command.ts";
import { backoffMs, commandProblem } from "../../../agent/client.ts";

describe("agent: the in-game login command", () => {
  it("reads /outpost login XXXX-XXXX whatever the case, with or without the hyphen, with extra spaces", () => {
    for (const text of [
      "/outpost login ABCD-1234",
      "/outpost login abcd-1234",
      "/OutPost LOGIN AbCd1234",
      "/outpost login abcd1234",
      "   /outpost    login     ABCD-1234   ",
      "/outpost\tlogin\tABCD - 1234",
      "/outpost login ABCD 1234",
      "outpost login ABCD-1234",
    ]) {
      assert.equal(parseLoginCommand(text), "ABCD1234", text);
    }
  });

  it("reads nothing else", () => {
    for (const text of [
      "",
      "/outpost",
      "/outpost login",
      "/outpost login ABC-1234",
      "/outpost login ABCD-12345",
      "/outpost login ABCD--1234",
      "/outpost login ABCD-1234 extra",
      "/outpost logout ABCD-1234",
      "/outpostlogin ABCD-1234",
      "/outpost loginABCD-1234",
      "//outpost login ABCD-1234",
      "/other login ABCD-1234",
      "/outpost login ABCD_1234",
      "/outpost login ÄBCD-1234",
      "hello",
    ]) {
      assert.equal(parseLoginCommand(text), undefined, JSON.stringify(text));
    }
  });

  it("shows a normalized code as players type it", () => {
    assert.equal(formatLoginCode("ABCD1234"), "ABCD-1234");
  });
});

describe("agent: the client's local rules", () => {
  const player = { name: "Steve", uuid: "123e4567-e89b-12d3-a456-426614174000" };

  it("checks a command against the contract before sending it", () => {
    assert.equal(commandProblem(player, "/outpost login ABCD-1234"), undefined);
    assert.match(commandProblem({ ...player, uuid: "not-a-uuid" }, "x")!, /not a UUID/);
    assert.match(commandProblem({ ...player, name: "two words" }, "x")!, /not a player name/);
    assert.match(commandProblem({ ...player, name: "x".repeat(33) }, "x")!, /not a player name/);
    assert.match(commandProblem(player, "x".repeat(257))!, /1 to 256 characters/);
    assert.match(commandProblem(player, "   ")!, /1 to 256 characters/);
  });

  it("backs off exponentially, capped, with jitter in the upper half", () => {
    for (let attempt = 0; attempt < 12; attempt++) {
      const base = Math.min(30_000, 500 * 2 ** attempt);
      for (let i = 0; i < 20; i++) {
        const delay = backoffMs(attempt, 500, 30_000);
        assert.ok(delay >= base / 2 && delay <= base, `attempt ${attempt}: ${delay} not within [${base / 2}, ${base}]`);
      }
    }
    assert.ok(backoffMs(1000, 500, 30_000) <= 30_000);
  });
});
