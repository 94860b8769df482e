import { expect } from "expect";
import { describeFlags, type FlagSpecs, parseFlags, UsageError } from "./flags.ts";

const specs = {
  kubeconfig: { kind: "string", help: "path", placeholder: "FILE" },
  "leader-elect": { kind: "boolean", help: "lead" },
  namespace: { kind: "list", help: "namespaces" },
  concurrency: { kind: "integer", help: "workers" },
  "log-format": { kind: "string", help: "format", choices: ["text", "json", "auto"] },
} as const;

Deno.test("flags: every spelling Kubernetes tools accept", () => {
  const { values, positional } = parseFlags(
    [
      "run",
      "--kubeconfig",
      "/k",
      "--leader-elect=false",
      "--namespace=a,b",
      "--namespace",
      "c",
      "--concurrency=3",
      "--log-format=json",
      "--",
      "--x",
    ],
    specs,
  );
  expect(values).toEqual({
    kubeconfig: "/k",
    "leader-elect": false,
    namespace: ["a", "b", "c"],
    concurrency: 3,
    "log-format": "json",
  });
  expect(positional).toEqual(["run", "--x"]);
  expect(parseFlags(["--leader-elect"], specs).values["leader-elect"]).toBe(true);
});

Deno.test("flags: mistakes are named, with a suggestion", () => {
  expect(() => parseFlags(["--kubeconfg=x"], specs)).toThrow(
    /unknown flag --kubeconfg; did you mean --kubeconfig\?/,
  );
  expect(() => parseFlags(["--zzz"], specs)).toThrow(UsageError);
  expect(() => parseFlags(["--concurrency=many"], specs)).toThrow(
    /--concurrency takes a whole number, not "many"/,
  );
  expect(() => parseFlags(["--leader-elect=maybe"], specs)).toThrow(/takes true or false/);
  expect(() => parseFlags(["--log-format=xml"], specs)).toThrow(
    /one of text, json, auto, not "xml"/,
  );
  expect(() => parseFlags(["--kubeconfig"], specs)).toThrow(/--kubeconfig needs a value \(FILE\)/);
});

Deno.test("flags: help lists every flag", () => {
  const help = describeFlags(specs);
  expect(help).toContain("--kubeconfig FILE");
  expect(help).toContain("--leader-elect ");
});

Deno.test("parsed values are typed by their specs", () => {
  const specs = {
    n: { kind: "integer", help: "" },
    on: { kind: "boolean", help: "" },
    list: { kind: "list", help: "" },
    level: { kind: "string", help: "", choices: ["debug", "info"] },
  } as const satisfies FlagSpecs;
  const { values } = parseFlags(["--n", "3", "--on", "--list=a,b", "--level=info"], specs);
  const n: number | undefined = values.n;
  const on: boolean | undefined = values.on;
  const list: string[] | undefined = values.list;
  const level: "debug" | "info" | undefined = values.level;
  // @ts-expect-error an integer flag is not a string
  const wrong: string | undefined = values.n;
  expect([n, on, list, level, wrong]).toEqual([3, true, ["a", "b"], "info", 3]);
});

Deno.test("defaults are written once: filled in, typed as present, and said in help", () => {
  const specs = {
    concurrency: { kind: "integer", placeholder: "N", help: "workers", default: 8 },
    "leader-elect": { kind: "boolean", help: "lead", defaultIs: "on in a cluster" },
    format: { kind: "string", help: "format", choices: ["text", "json"], default: "text" },
  } as const satisfies FlagSpecs;
  const { values } = parseFlags([], specs);
  const concurrency: number = values.concurrency;
  const format: "text" | "json" = values.format;
  // @ts-expect-error a flag whose default depends on the environment may be absent
  const lead: boolean = values["leader-elect"];
  expect([concurrency, format, lead]).toEqual([8, "text", undefined]);
  expect(parseFlags(["--concurrency=2"], specs).values.concurrency).toBe(2);
  expect(describeFlags(specs).split("\n").map((line) => line.replace(/ +/g, " "))).toEqual([
    " --concurrency N workers (default 8)",
    " --leader-elect lead (default: on in a cluster)",
    " --format string format (default text)",
  ]);
});
