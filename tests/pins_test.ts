import { expect } from "expect";
import { inCi } from "../testing/ci.ts";

const root = new URL("../", import.meta.url);
const ciScript = Deno.readTextFileSync(new URL(".ci/run", root));
const pinned = ciScript.match(/^DENO_VERSION=(\S+)$/m)?.[1];

Deno.test("the README and .ci/run pin the same Deno, and CI runs on it", () => {
  expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
  const readme = Deno.readTextFileSync(new URL("README.md", root));
  expect(readme).toContain(`npm install -g deno@${pinned}`);
  expect(readme).toContain(`npx --yes deno@${pinned} task dev`);
  // No other version anywhere people copy commands from.
  for (const page of ["README.md", "docs/contributing.md", "plugins/README.md"]) {
    const text = Deno.readTextFileSync(new URL(page, root));
    const versions = [...text.matchAll(/\bdeno@(\d+\.\d+\.\d+)/g)].map((m) => m[1]);
    expect({ page, versions: versions.filter((v) => v !== pinned) }).toEqual({
      page,
      versions: [],
    });
  }
  expect(readme).toContain("deno task test");
  expect(ciScript).toContain("deno task test");
  if (inCi()) expect(Deno.version.deno).toBe(pinned);
});
