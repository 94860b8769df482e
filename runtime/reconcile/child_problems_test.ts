import { expect } from "expect";
import { ChildProblems } from "./child_problems.ts";

const PARENT = { group: "pt.example.com", kind: "Ptemplate", namespace: "ns", name: "p" };
const problem = (plugin: string, name: string) => ({
  plugin,
  kind: "DaemonSet",
  name,
  reason: "ChildNameTaken" as const,
  message: `${name} is taken`,
});

Deno.test("child problems: by parent, from every plugin; listeners hear only of changes", () => {
  const problems = new ChildProblems();
  const heard: string[] = [];
  problems.onChange((parent, plugin) => heard.push(`${parent.name} ${plugin}`));
  problems.set(PARENT, "a", [problem("a", "x")]);
  problems.set(PARENT, "b", [problem("b", "y")]);
  problems.set(PARENT, "a", [problem("a", "x")]); // the same again: no news
  expect(problems.get({ ...PARENT, uid: "known now" }).map((p) => p.name)).toEqual(["x", "y"]);
  // A namesake of another kind is another parent.
  expect(problems.get({ ...PARENT, kind: "Memcached" })).toEqual([]);
  problems.set(PARENT, "a", []);
  expect(problems.get(PARENT).map((p) => p.name)).toEqual(["y"]);
  problems.forget(PARENT);
  expect(problems.get(PARENT)).toEqual([]);
  expect(heard).toEqual(["p a", "p b", "p a"]);
});
