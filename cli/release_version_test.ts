import { expect } from "expect";
import denoJson from "../deno.json" with { type: "json" };
import { changelogSection, imageTagOf, releaseProblems } from "./release_version.ts";

const CHANGELOG = `# Changelog

## 0.3.0

### Added

- Releases.

## 0.2.0

- Older.
`;

Deno.test("a release's tag, version, image tag and CHANGELOG section must agree", () => {
  const good = { tag: "v0.3.0", version: "0.3.0", imageTag: "v0.3.0", changelog: CHANGELOG };
  expect(releaseProblems(good)).toEqual([]);
  // By hand, without a tag: the rest still agree.
  expect(releaseProblems({ ...good, tag: undefined })).toEqual([]);
  expect(releaseProblems({ ...good, tag: "v0.3.1" })).toEqual([
    "tag v0.3.1 is not deno.json's version v0.3.0: tag the commit whose deno.json says 0.3.1, " +
    "or set the version first",
  ]);
  expect(releaseProblems({ ...good, tag: "0.3.0" })).toHaveLength(1);
  expect(releaseProblems({ ...good, imageTag: "v0.1.0" })).toEqual([
    "deploy/core/kustomization.yaml installs the image tag v0.1.0, not v0.3.0: set its newTag to " +
    "the version",
  ]);
  expect(releaseProblems({ ...good, tag: "v0.4.0", version: "0.4.0", imageTag: "v0.4.0" }))
    .toEqual([
      'CHANGELOG.md has no section "## 0.4.0" saying what changed and what an upgrade needs: ' +
      'rename "## Unreleased" to it',
    ]);
  expect(releaseProblems({ ...good, tag: "vnext", version: "next", imageTag: "vnext" })[0])
    .toMatch(/"next" is not a semantic version/);
});

Deno.test("the notes are the version's section, up to the next", () => {
  expect(changelogSection(CHANGELOG, "0.3.0")).toBe("### Added\n\n- Releases.");
  expect(changelogSection(CHANGELOG, "0.2.0")).toBe("- Older.");
  // 0.3.0 is not 0.3.01 nor 10.3.0.
  expect(changelogSection("## 10.3.0\n\nx\n", "0.3.0")).toBeUndefined();
  expect(changelogSection(CHANGELOG, "0.3")).toBeUndefined();
});

Deno.test("this repository is a consistent release of deno.json's version", () => {
  const read = (path: string) => Deno.readTextFileSync(new URL(`../${path}`, import.meta.url));
  expect(imageTagOf(read("deploy/core/kustomization.yaml"))).toBe(`v${denoJson.version}`);
  expect(releaseProblems({
    tag: `v${denoJson.version}`,
    version: denoJson.version,
    imageTag: imageTagOf(read("deploy/core/kustomization.yaml")),
    changelog: read("CHANGELOG.md"),
  })).toEqual([]);
});
