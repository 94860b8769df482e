import { expect } from "expect";
import { configAbove, parseDiagnostics, typeCheckRefusal } from "./plugin_type_check.ts";

Deno.test("deno check's diagnostics are read as file, line, column, code and first line", () => {
  const output = `Check my_plugin.ts
TS2322 [ERROR]: Type 'string' is not assignable to type 'number'.
    const n: number = cm.metadata.name;
          ^
    at file:///tmp/p/my_plugin.ts:9:11

TS2345 [ERROR]: Argument of type '{ a: number; }' is not assignable to parameter of type 'X'.
  Object literal may only specify known properties.
    f({ a: 1 });
    ^
    at file:///tmp/p/lib%20dir/helper.ts:3:5

Found 2 errors.

error: Type checking failed.
`;
  expect(parseDiagnostics(output)).toEqual([
    {
      file: "/tmp/p/my_plugin.ts",
      line: 9,
      column: 11,
      code: "TS2322",
      message: "Type 'string' is not assignable to type 'number'.",
    },
    {
      file: "/tmp/p/lib dir/helper.ts",
      line: 3,
      column: 5,
      code: "TS2345",
      message: "Argument of type '{ a: number; }' is not assignable to parameter of type 'X'.",
    },
  ]);
  expect(parseDiagnostics('error: Module not found "file:///x.ts".')).toEqual([]);
});

Deno.test("a refusal names the first errors and how many more, and the command that shows all", () => {
  const error = (line: number) => ({
    file: "/p/x.ts",
    line,
    column: 1,
    code: "TS2322",
    message: "Wrong.",
  });
  const text = typeCheckRefusal("./x.ts", "/p/x.ts", [1, 2, 3, 4, 5].map(error));
  expect(text).toContain("(5 errors): /p/x.ts:1:1: TS2322 Wrong.; /p/x.ts:2:1: TS2322 Wrong.;");
  expect(text).toContain("/p/x.ts:3:1: TS2322 Wrong.; and 2 more.");
  expect(text).toContain("run `deno check /p/x.ts` until it passes");
});

Deno.test("a module's own configuration is the nearest deno.json above it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "config-above-" });
  try {
    await Deno.mkdir(`${dir}/a/b`, { recursive: true });
    await Deno.writeTextFile(`${dir}/a/deno.jsonc`, "{}");
    expect(configAbove(`${dir}/a/b`)).toBe(`${dir}/a/deno.jsonc`);
    await Deno.writeTextFile(`${dir}/a/b/deno.json`, "{}");
    expect(configAbove(`${dir}/a/b`)).toBe(`${dir}/a/b/deno.json`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
