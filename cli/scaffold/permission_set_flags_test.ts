import { expect } from "expect";
import { permissionFlags, permissionSetOf, type PermissionSets } from "./permission_set_flags.ts";

const SETS: PermissionSets = {
  operator: { read: true, net: true, env: ["KUBECONFIG", "HOME"], sys: ["hostname"], run: true },
  quiet: { read: ["crds", "../x"], write: false, env: { ignore: true } },
  mixed: { net: { allow: ["127.0.0.1"], deny: ["127.0.0.1:22"] }, run: { deny: true } },
  everything: { all: true },
  nothing: { all: false },
};

Deno.test("a set's grants become flags: all, lists (paths as written), and allow/deny/ignore parts", () => {
  expect(permissionFlags("deno run -P=operator main.ts", SETS)).toEqual([
    "--allow-read",
    "--allow-net",
    "--allow-env=KUBECONFIG,HOME",
    "--allow-sys=hostname",
    "--allow-run",
  ]);
  expect(permissionFlags("deno run -P=quiet x.ts", SETS)).toEqual([
    "--allow-read=crds,../x",
    "--ignore-env",
  ]);
  expect(permissionFlags("deno run --permission-set=mixed x.ts", SETS)).toEqual([
    "--allow-net=127.0.0.1",
    "--deny-net=127.0.0.1:22",
    "--deny-run",
  ]);
  expect(permissionFlags("deno run -P=everything x.ts", SETS)).toEqual(["--allow-all"]);
  expect(permissionFlags("deno run -P=nothing x.ts", SETS)).toEqual([]);
});

Deno.test("a command's own permission flags stay, after its set's, and nothing else is taken", () => {
  const command =
    "GLIBC_TUNABLES=x deno test -P=operator --deny-run --parallel --v8-flags=--expose-gc --ignore-env=PATH --ignore=tests/";
  expect(permissionFlags(command, SETS)).toEqual([
    "--allow-read",
    "--allow-net",
    "--allow-env=KUBECONFIG,HOME",
    "--allow-sys=hostname",
    "--allow-run",
    "--deny-run",
    "--ignore-env=PATH",
  ]);
  expect(permissionFlags("deno run --allow-read=. x.ts", SETS)).toEqual(["--allow-read=."]);
  expect(permissionSetOf(command)).toBe("operator");
  expect(permissionSetOf("deno run --permission-set=mixed x.ts")).toBe("mixed");
  expect(permissionSetOf("deno run --allow-read x.ts")).toBeUndefined();
});

Deno.test("a set that is not there, or a bare -P, is refused, naming what to write", () => {
  expect(() => permissionFlags("deno run -P=operater main.ts", SETS)).toThrow(
    'deno.json has no permission set "operater"',
  );
  expect(() => permissionFlags("deno test -P x_test.ts", SETS)).toThrow("-P=<name>");
  expect(() => permissionFlags("deno test --permission-set x_test.ts", SETS)).toThrow("-P=<name>");
});
