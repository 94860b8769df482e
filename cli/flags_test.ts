import { expect } from "expect";
import { describeFlags, parseFlags, UsageError } from "./flags.ts";

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
