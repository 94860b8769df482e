/**
 * The release workflow's own shell steps, run as a runner runs them (`bash -e`, its environment
 * variables, `${{ … }}` filled in), in a fresh clone, wherever they need no GitHub, registry or
 * container engine: the tag check on the right tag, a wrong one and no tag; the OLM bundle from
 * deno.json's version, checked by the scorecard and packed; the checksums; and the release notes,
 * this version's CHANGELOG section.
 */
import { expect } from "expect";
import { parse } from "yaml";
import { VERSION } from "../cli/release/version.ts";
import { freshClone } from "./fixtures/fresh_clone.ts";

interface Step {
  name?: string;
  run?: string;
}
const workflow = parse(
  Deno.readTextFileSync(new URL("../.github/workflows/release.yml", import.meta.url)),
) as { jobs: Record<string, { steps: Step[] }> };

/** A step's script, found by its job and name; `npm install -g deno` left out (Deno is here). */
function script(job: string, name: string): string {
  const step = workflow.jobs[job].steps.find((s) => s.name === name);
  if (!step?.run) throw new Error(`release.yml: no step "${name}" in job ${job}`);
  return step.run.split("\n").filter((line) => !/^\s*npm install -g deno@/.test(line)).join("\n");
}

/** Runs a script as a runner does, with `expressions` (`${{ … }}`) and `env` filled in. */
async function run(
  cwd: string,
  text: string,
  env: Record<string, string>,
  expressions: Record<string, string> = {},
) {
  const filled = text.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (whole, name: string) => {
    if (!(name in expressions)) throw new Error(`no value for ${whole}`);
    return expressions[name];
  });
  const denoDir = Deno.execPath().slice(0, Deno.execPath().lastIndexOf("/"));
  const out = await new Deno.Command("bash", {
    args: ["-e", "-c", filled],
    cwd,
    env: { ...env, NO_COLOR: "1", PATH: `${denoDir}:${Deno.env.get("PATH")}` },
    stdin: "null",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

Deno.test("the release workflow's steps, run as the runner runs them", async (t) => {
  const { dir, clone } = await freshClone();
  try {
    await t.step(
      "the tag check passes v<version>, refuses another tag, checks without one",
      async () => {
        const gate = script("test", "The tag is deno.json's version");
        const tagged = await run(clone, gate, {
          GITHUB_REF_TYPE: "tag",
          GITHUB_REF_NAME: `v${VERSION}`,
        });
        expect(tagged).toMatchObject({ code: 0 });
        expect(tagged.stderr).toContain(`release: v${VERSION} is consistent`);
        const wrong = await run(clone, gate, { GITHUB_REF_TYPE: "tag", GITHUB_REF_NAME: "v9.9.9" });
        expect(wrong.code).toBe(1);
        expect(wrong.stderr).toContain(`tag v9.9.9 is not deno.json's version v${VERSION}`);
        const byHand = await run(clone, gate, {
          GITHUB_REF_TYPE: "branch",
          GITHUB_REF_NAME: "main",
        });
        expect(byHand.code).toBe(0);
      },
    );

    await t.step(
      "the OLM bundle: deno.json's version, the image by digest, scorecard, packed",
      async () => {
        const digest = `sha256:${"0".repeat(64)}`;
        const made = await run(clone, script("image", "OLM bundle and catalog entry"), {
          IMAGE: "ghcr.io/owner/ptemplate-operator",
          GITHUB_REF_NAME: "main",
        }, { "steps.build.outputs.digest": digest });
        // Deno's "Task bundle …" line, and its word that permission sets in deno.json are
        // experimental, are all it says on stderr.
        // deno-lint-ignore no-control-regex
        const said = made.stderr.replace(/\x1b\[[0-9;]*m/g, "").split("\n").filter((l) =>
          l && !l.startsWith("Task bundle ") &&
          !/^Warning Permissions in the config file is an experimental feature/.test(l)
        );
        expect({ code: made.code, said }).toEqual({ code: 0, said: [] });
        expect(made.stdout).toMatch(/^pass {2}/m);
        const csv = await Deno.readTextFile(
          `${clone}/bundle/manifests/ptemplate-operator.clusterserviceversion.yaml`,
        );
        expect(csv).toContain(`name: ptemplate-operator.v${VERSION}`);
        expect(csv).toContain(`image: ghcr.io/owner/ptemplate-operator@${digest}`);
        const listed = await new Deno.Command("tar", {
          args: ["-tzf", `ptemplate-operator-olm-v${VERSION}.tar.gz`],
          cwd: clone,
        }).output();
        const files = new TextDecoder().decode(listed.stdout);
        for (const path of ["bundle/manifests/", "bundle.Dockerfile", "catalog/"]) {
          expect(files).toContain(path);
        }
      },
    );

    await t.step("checksums of what is published, and the notes from the CHANGELOG", async () => {
      await Deno.mkdir(`${clone}/dist`);
      for (const name of ["ptemplate-operator-linux-x64", "ptemplate-operator-macos-arm64"]) {
        await Deno.writeTextFile(`${clone}/dist/${name}`, name);
      }
      const summed = await run(`${clone}/dist`, script("publish", "Checksums"), {});
      expect(summed.code).toBe(0);
      const checked = await run(`${clone}/dist`, "sha256sum -c SHA256SUMS", {});
      expect(checked.stdout).toContain("ptemplate-operator-linux-x64: OK");
      const notes = await run(
        clone,
        script("publish", "Release notes, the version's CHANGELOG section"),
        {},
      );
      expect(notes.code).toBe(0);
      const text = await Deno.readTextFile(`${clone}/dist/NOTES.md`);
      expect(text).toMatch(/^### Upgrade needs\n/);
      expect(text).not.toContain(`## ${VERSION}`);
      expect(text).not.toMatch(/^## /m);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
