import { expect } from "expect";
import { AuditTail, madeAnObject, parseAuditLog, readAuditLog } from "./audit_log.ts";

const event = (verb: string) =>
  JSON.stringify({ verb, user: { username: "u" }, requestURI: "/", requestReceivedTimestamp: "t" });

Deno.test("an audit log read mid-write yields its whole lines and leaves the torn last one", () => {
  const log = `${event("create")}\n${event("patch")}\n`;
  expect(parseAuditLog(log).map((e) => e.verb)).toEqual(["create", "patch"]);
  // The bench once died on this: the API server had written half of the next line.
  const torn = log + event("update").slice(0, 40);
  expect(parseAuditLog(torn).map((e) => e.verb)).toEqual(["create", "patch"]);
  expect(parseAuditLog("")).toEqual([]);
});

Deno.test("a broken line that is not the last is still an error, not an event lost", () => {
  expect(() => parseAuditLog(`${event("create").slice(0, 40)}\n${event("patch")}\n`)).toThrow();
});

Deno.test("a rotated audit log is read whole, its backups first, oldest first", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/audit-2026-12-02T13-36-42.189.log`, `${event("update")}\n`);
    await Deno.writeTextFile(`${dir}/audit-2026-12-02T09-00-00.000.log`, `${event("create")}\n`);
    await Deno.writeTextFile(`${dir}/audit.log`, `${event("patch")}\n${event("delete")}`);
    await Deno.writeTextFile(`${dir}/audit-policy.yaml`, "rules: []\n");
    expect((await readAuditLog(dir)).map((e) => e.verb)).toEqual(["create", "update", "patch"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a tail returns what was written since it last read, across a torn line and a rotation", async () => {
  const dir = await Deno.makeTempDir();
  const log = `${dir}/audit.log`;
  const verbs = async (tail: AuditTail) => (await tail.read()).map((e) => e.verb);
  try {
    const tail = new AuditTail(dir);
    expect(await verbs(tail)).toEqual([]);
    await Deno.writeTextFile(`${dir}/audit-2026-12-02T09-00-00.000.log`, `${event("get")}\n`);
    await Deno.writeTextFile(log, `${event("create")}\n${event("patch").slice(0, 30)}`);
    expect(await verbs(tail)).toEqual(["get", "create"]);
    expect(await verbs(tail)).toEqual([]);
    // The torn line is finished, and another written.
    await Deno.writeTextFile(log, `${event("patch").slice(30)}\n${event("update")}\n`, {
      append: true,
    });
    expect(await verbs(tail)).toEqual(["patch", "update"]);
    // One more line, then the API server rotates: the file becomes a backup, a new one begins.
    await Deno.writeTextFile(log, `${event("delete")}\n`, { append: true });
    await Deno.rename(log, `${dir}/audit-2026-12-03T11-00-00.000.log`);
    await Deno.writeTextFile(log, `${event("list")}\n`);
    expect(await verbs(tail)).toEqual(["delete", "list"]);
    expect(await verbs(tail)).toEqual([]);
    // A fresh reader still reads the whole log, backups first.
    expect(await readAuditLog(dir).then((events) => events.map((e) => e.verb))).toEqual([
      "get",
      "create",
      "patch",
      "update",
      "delete",
      "list",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an object is made by a create, or an apply or update that created it; not when refused", () => {
  const answered = (verb: string, code: number) => ({
    ...JSON.parse(event(verb)),
    responseStatus: { code },
  });
  const made = [
    answered("create", 201),
    answered("patch", 201),
    answered("patch", 200),
    answered("create", 409),
    answered("patch", 409),
    answered("update", 201),
  ].map(madeAnObject);
  expect(made).toEqual([true, true, false, false, false, true]);
});
