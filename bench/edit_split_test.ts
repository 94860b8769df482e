import { expect } from "expect";
import type { AuditEvent } from "../testing/audit_log.ts";
import { reachOf, splitOf, writesNear, writesOf } from "./edit_split.ts";

const SA = "system:serviceaccount:x:op";
const write = (name: string, sent: number, answered: number, over: Partial<AuditEvent> = {}) => ({
  verb: "patch",
  user: { username: SA },
  objectRef: { resource: "modules", namespace: "scale", name },
  requestURI: "/",
  requestReceivedTimestamp: new Date(sent).toISOString(),
  stageTimestamp: new Date(answered).toISOString(),
  ...over,
});

Deno.test("splitOf: the last write of the Module between the change and its sight carried it", () => {
  const audit: AuditEvent[] = [
    write("a", 500, 900), // before the change: the backlog's write, not the edit's
    write("a", 1_400, 1_900),
    write("a", 2_000, 2_600), // the one that carried it
    write("a", 3_000, 3_100), // after it was seen
    write("b", 1_100, 1_200, { user: { username: "someone" } }),
    write("b", 1_100, 1_200, { verb: "get" }),
  ];
  const split = splitOf(
    [
      { name: "a", writtenAt: 1_000, seenAt: 2_620 },
      { name: "b", writtenAt: 1_000, seenAt: 1_300 },
      { name: "a", writtenAt: 1_000 },
    ],
    audit,
    { username: SA, namespace: "scale" },
  );
  expect(split).toEqual({
    beforeWriteMs: [1_000],
    writeMs: [600],
    each: [{ beforeWriteMs: 1_000, writeMs: 600 }, undefined, undefined],
  });
});

Deno.test("writesNear: the Module's writes around a change, as ms from its write", () => {
  const writes = writesOf([
    write("a", 0, 100), // long before
    write("a", 900, 1_100), // sent before the change was written, answered after
    write("a", 1_400, 1_900),
    write("a", 9_000, 9_100), // long after it was seen
    write("b", 1_400, 1_900),
  ], { username: SA, namespace: "scale" });
  expect(writesNear({ name: "a", writtenAt: 1_000, seenAt: 2_000 }, writes, 500)).toEqual([
    { sentMs: -100, answeredMs: 100 },
    { sentMs: 400, answeredMs: 900 },
  ]);
});

Deno.test("reachOf: from the API server's answer to the change to its answer to the children", () => {
  const admin = { user: { username: "admin" } };
  const ptemplate = (name: string, sent: number, answered: number) =>
    write(name, sent, answered, {
      ...admin,
      objectRef: { resource: "ptemplates", namespace: "scale", name },
    });
  const daemonSet = (name: string, sent: number, answered: number) =>
    write(name, sent, answered, {
      objectRef: { resource: "daemonsets", namespace: "scale", name },
    });
  const audit: AuditEvent[] = [
    ptemplate("a", 900, 950), // the edit, answered at 950; the bench had it at 1,200
    write("a", 700, 1_000), // a backlog write sent before the edit
    write("a", 1_100, 1_300), // the one that carried it
    ptemplate("n", 1_000, 1_010), // a creation: both children count
    write("n", 1_020, 1_100),
    daemonSet("n-consumer", 1_020, 1_400),
    ptemplate("x", 1_000, 1_010), // its child never written
  ];
  const children = (c: { name: string; kind: string }) =>
    c.kind === "create"
      ? [{ resource: "modules", name: c.name }, {
        resource: "daemonsets",
        name: `${c.name}-consumer`,
      }]
      : [{ resource: "modules", name: c.name }];
  const reach = reachOf(
    [
      { kind: "edit", name: "a", writtenAt: 1_200, seenAt: 1_900 },
      { kind: "create", name: "n", writtenAt: 1_050, seenAt: 1_600 },
      { kind: "edit", name: "x", writtenAt: 1_050, seenAt: 1_600 },
      { kind: "edit", name: "a", writtenAt: 1_200 },
    ],
    audit,
    { username: SA, namespace: "scale", children },
  );
  expect(reach).toEqual([350, 390, undefined, undefined]);
});
