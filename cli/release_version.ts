/**
 * A release's one version: deno.json's, which the tag (`vX.Y.Z`), the image tag deploy/ installs
 * and a section of CHANGELOG.md must all name, so that a tag can only release what the repository
 * says it is. The release workflow runs this on the tag before anything is built, and takes the
 * release notes from it (`--notes`).
 *
 *   deno run --allow-read cli/release_version.ts [--tag vX.Y.Z]   # problems, exit 1 if any
 *   deno run --allow-read cli/release_version.ts --notes          # the version's CHANGELOG section
 */

/** What a release is checked against. */
export interface ReleaseInputs {
  /** The git tag being released, when there is one. */
  tag?: string;
  /** deno.json's version. */
  version: string;
  /** The tag of the image deploy/core/kustomization.yaml installs. */
  imageTag?: string;
  /** CHANGELOG.md. */
  changelog: string;
}

const SEMVER = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/;

/** The CHANGELOG's section for `version` (`## 0.3.0 …` up to the next `## `), without its heading. */
export function changelogSection(changelog: string, version: string): string | undefined {
  const lines = changelog.split("\n");
  const start = lines.findIndex((l) =>
    new RegExp(`^## \\[?v?${escapeRegExp(version)}\\]?(\\s|$)`).test(l)
  );
  if (start < 0) return undefined;
  const end = lines.findIndex((l, i) => i > start && /^## /.test(l));
  return lines.slice(start + 1, end < 0 ? undefined : end).join("\n").trim();
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Everything that keeps `inputs` from being a release, each with its fix; empty when none. */
export function releaseProblems(inputs: ReleaseInputs): string[] {
  const { tag, version, imageTag, changelog } = inputs;
  const problems: string[] = [];
  if (!SEMVER.test(version)) {
    problems.push(`deno.json's version "${version}" is not a semantic version such as 0.3.0`);
  }
  if (tag !== undefined && tag !== `v${version}`) {
    problems.push(
      `tag ${tag} is not deno.json's version v${version}: tag the commit whose deno.json says ` +
        `${tag.replace(/^v/, "")}, or set the version first`,
    );
  }
  if (imageTag !== undefined && imageTag !== `v${version}`) {
    problems.push(
      `deploy/core/kustomization.yaml installs the image tag ${imageTag}, not v${version}: ` +
        "set its newTag to the version",
    );
  }
  const notes = changelogSection(changelog, version);
  if (!notes) {
    problems.push(
      `CHANGELOG.md has no section "## ${version}" saying what changed and what an upgrade ` +
        'needs: rename "## Unreleased" to it',
    );
  }
  return problems;
}

/** The image tag of the `images:` entry in a kustomization's text. */
export function imageTagOf(kustomization: string): string | undefined {
  return kustomization.match(/^\s+newTag:\s*(\S+)\s*$/m)?.[1];
}

if (import.meta.main) {
  const root = new URL("../", import.meta.url);
  const read = (path: string) => Deno.readTextFileSync(new URL(path, root));
  const args = [...Deno.args];
  const tagAt = args.indexOf("--tag");
  const inputs: ReleaseInputs = {
    tag: tagAt >= 0 ? args[tagAt + 1] : undefined,
    version: JSON.parse(read("deno.json")).version,
    imageTag: imageTagOf(read("deploy/core/kustomization.yaml")),
    changelog: read("CHANGELOG.md"),
  };
  if (args.includes("--notes")) {
    console.log(changelogSection(inputs.changelog, inputs.version) ?? "");
  }
  const problems = releaseProblems(inputs);
  for (const problem of problems) console.error(`release: ${problem}`);
  if (!problems.length && !args.includes("--notes")) {
    console.error(`release: v${inputs.version} is consistent`);
  }
  Deno.exit(problems.length ? 1 : 0);
}
