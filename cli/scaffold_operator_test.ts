import { expect } from "expect";
import denoJson from "../deno.json" with { type: "json" };
import { operatorFiles, RELEASE_URL, RUNTIME_IMPORTS } from "./scaffold_operator.ts";
import { VERSION } from "./version.ts";

const config = (runtime: string) =>
  JSON.parse(
    operatorFiles({ name: "backup-operator", domain: "backup.example.com", runtime })
      .find((f) => f.path === "deno.json")!.text,
  );

Deno.test("a new operator's repository: its files, its identity, its tasks", () => {
  const files = operatorFiles({
    name: "backup-operator",
    domain: "backup.example.com",
    runtime: "../ptemplate-operator/",
  });
  expect(files.map((f) => f.path)).toEqual([
    "deno.json",
    "operator.ts",
    "catalog.ts",
    "main.ts",
    "crds.ts",
    "crds_test.ts",
    "README.md",
    ".gitignore",
  ]);
  expect(files[1].text).toContain('name: "backup-operator",\n  domain: "backup.example.com",');
  const { tasks, imports } = config("../ptemplate-operator/");
  expect(Object.keys(tasks)).toEqual(["test", "check", "start", "compile", "crds", "new"]);
  // The binary's permissions are ours, exactly; the tests' too (expect reads CI's variables).
  const flags = (command: string) => command.split(" ").filter((w) => w.startsWith("--allow"));
  expect(flags(tasks.start.command)).toEqual(flags(denoJson.tasks.start.command));
  expect(flags(tasks.compile.command)).toEqual(flags(denoJson.tasks.compile.command));
  expect(flags(tasks.test.command)).toEqual(flags(denoJson.tasks.test.command));
  expect(tasks.test.command).toContain("--allow-env");
  expect(tasks.compile.command).toContain("--output dist/backup-operator main.ts");
  expect(tasks.new.command).toMatch(
    /--allow-write=plugins,catalog\.ts,crds \.\.\/ptemplate-operator\/main\.ts new$/,
  );
  // Every package the runtime imports, at our versions, and the runtime where it was said to be.
  expect(imports).toEqual({
    "ptemplate-operator/": "../ptemplate-operator/",
    ...Object.fromEntries(
      RUNTIME_IMPORTS.map((n) => [n, (denoJson.imports as Record<string, string>)[n]]),
    ),
  });
});

Deno.test("from a release URL: imported from this version's tag, fetched by the tests too", () => {
  expect(RELEASE_URL).toBe(
    `https://raw.githubusercontent.com/ptemplate/ptemplate-operator/v${VERSION}/`,
  );
  const { tasks, imports } = config(RELEASE_URL);
  expect(imports["ptemplate-operator/"]).toBe(RELEASE_URL);
  expect(tasks.test.command).toContain(
    "--allow-net=127.0.0.1,localhost,raw.githubusercontent.com ",
  );
  expect(tasks.new.command).toContain(`${RELEASE_URL}main.ts new`);
});

Deno.test("a name or domain that would make invalid objects is refused before anything is written", () => {
  expect(() => operatorFiles({ name: "Backup", domain: "backup.example.com", runtime: "./" }))
    .toThrow(/operator name "Backup"/);
  expect(() => operatorFiles({ name: "backup", domain: "localhost", runtime: "./" }))
    .toThrow(/operator domain "localhost"/);
});
