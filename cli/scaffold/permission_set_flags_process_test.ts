/**
 * Each of deno.json's permission sets, written out as flags, grants what Deno grants for `-P`:
 * both are asked, in a deno process each, about every kind of permission, with values a set names
 * and values it must not grant.
 */
import { expect } from "expect";
import denoJson from "../../deno.json" with { type: "json" };
import { permissionFlags } from "./permission_set_flags.ts";

const root = new URL("../../", import.meta.url);

/** Asks about every permission; env reads are tried too, since `ignore` is not a query state. */
const PROBE = `
const env = ${JSON.stringify([...denoJson.permissions.operator.env, "PATH"])};
const asked = [
  { name: "read" }, { name: "read", path: "crds" }, { name: "read", path: "/etc/hostname" },
  { name: "write" }, { name: "write", path: "/tmp/x" }, { name: "write", path: "../elsewhere" },
  ${
  Object.values(denoJson.permissions).flatMap((set) =>
    "write" in set && Array.isArray(set.write)
      ? set.write.map((path) => `{ name: "write", path: ${JSON.stringify(`${path}/x`)} }`)
      : []
  ).join(", ")
},
  { name: "net" }, { name: "net", host: "127.0.0.1:6443" }, { name: "net", host: "localhost" },
  { name: "net", host: "example.com:443" }, { name: "env" },
  ...env.map((variable) => ({ name: "env", variable })),
  ...["hostname", "osRelease", "uid", "gid", "loadavg", "networkInterfaces"].map((kind) => ({
    name: "sys", kind })),
  { name: "run" }, { name: "run", command: "kubectl" }, { name: "ffi" },
];
const answers = [];
for (const d of asked) answers.push([JSON.stringify(d), (await Deno.permissions.query(d)).state]);
for (const variable of env) {
  let read;
  try { read = Deno.env.get(variable) === undefined ? "undefined" : "a value"; }
  catch (e) { read = e.name; }
  answers.push(["Deno.env.get(" + variable + ")", read]);
}
console.log(JSON.stringify(answers));
`;

async function answers(flags: string[]): Promise<[string, string][]> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/probe.ts`, PROBE);
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        "--config",
        `${root.pathname}deno.json`,
        ...flags,
        `${dir}/probe.ts`,
      ],
      cwd: root.pathname,
      env: { NO_COLOR: "1", KUBECONFIG: "/nowhere", HOME: "/home/x" },
      stdin: "null",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    expect({ flags, code: out.code, stderr: stderr.match(/error.*/i)?.[0] ?? "" })
      .toEqual({ flags, code: 0, stderr: "" });
    return JSON.parse(new TextDecoder().decode(out.stdout));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

for (const set of Object.keys(denoJson.permissions)) {
  Deno.test(`-P=${set} and its flags grant the same`, async () => {
    const bySet = await answers([`-P=${set}`]);
    const flags = permissionFlags(`deno run -P=${set} x.ts`, denoJson.permissions);
    expect(await answers(flags)).toEqual(bySet);
  });
}

Deno.test("the probe tells the sets apart: what the operator may read and write", async () => {
  const granted = (list: [string, string][]) =>
    list.filter(([, state]) => state === "granted" || state === "a value").map(([d]) => d);
  const operator = granted(await answers(["-P=operator"]));
  expect(operator).toContain(JSON.stringify({ name: "env", variable: "KUBECONFIG" }));
  expect(operator).toContain("Deno.env.get(KUBECONFIG)");
  expect(operator).not.toContain(JSON.stringify({ name: "env", variable: "PATH" }));
  expect(operator.filter((d) => d.includes('"write"'))).toEqual([]);
  const bundle = await answers(["-P=bundle"]);
  expect(bundle).toContainEqual(["Deno.env.get(KUBECONFIG)", "undefined"]);
  expect(granted(bundle)).toContain(JSON.stringify({ name: "write", path: "catalog/x" }));
  expect(granted(bundle)).not.toContain(JSON.stringify({ name: "write", path: "crds/x" }));
});
