/**
 * The docs say what is true: the README stays a front door, its plugin compiles and does what the
 * README says, every `ts` block of the README and docs/ type-checks against this checkout, every
 * relative link (and heading it names) exists, and the objects the guides tell people to delete
 * are ones deploy/ installs. (Their shell commands: tests/documented_commands_test.ts; the
 * tutorial's files, in the operator they belong to: tests/tutorial_test.ts.)
 */
import { expect } from "expect";
import { parseAllDocuments } from "yaml";
import { DEPLOYMENT } from "../kube/kinds.ts";
import type { Deployment } from "kubernetes-types/apps/v1.d.ts";
import type { Plugin } from "../runtime/plugin/mod.ts";
import { reconcileOnce } from "../testing/reconcile_once.ts";

const root = new URL("../", import.meta.url);
const read = (path: string) => Deno.readTextFileSync(new URL(path, root));

/** Every markdown file under `folder`, as paths from the repository's root. */
function markdownUnder(folder: string): string[] {
  return [...Deno.readDirSync(new URL(`${folder}/`, root))].flatMap((entry) => {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory) return markdownUnder(path);
    return entry.isFile && entry.name.endsWith(".md") ? [path] : [];
  });
}

/** The pages people read: the README, the book, the benchmarks, the plugin guide, the changelog. */
const PAGES = [
  "README.md",
  ...markdownUnder("docs"),
  "bench/README.md",
  "plugins/README.md",
  "CHANGELOG.md",
];

/** The fenced blocks of `language` in `text`, with what precedes each (for markers). */
function blocks(text: string, language: string): { code: string; before: string }[] {
  return [...text.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\``, "gm"))]
    .map((m) => ({ code: m[1], before: text.slice(Math.max(0, m.index! - 200), m.index) }));
}

Deno.test("the README is a front door: at most 200 lines, and it sends people to the book", () => {
  const readme = read("README.md");
  expect(readme.split("\n").length - 1).toBeLessThanOrEqual(200);
  expect(readme).toContain("](docs/README.md)");
  expect(readme).not.toMatch(/bench\/results\/|×|MiB above/);
});

Deno.test("every ts block of the README and docs/ type-checks against this checkout", async () => {
  const dir = await Deno.makeTempDir({ prefix: "docs-samples-" });
  try {
    const files: string[] = [];
    for (const page of ["README.md", ...markdownUnder("docs")]) {
      for (const [i, { code, before }] of blocks(read(page), "ts").entries()) {
        // A file of the tutorial's operator, checked there, beside the files it imports, by
        // tests/tutorial_test.ts (`deno task check` in that operator).
        if (/<!-- tutorial: write \S+ -->\n+$/.test(before)) continue;
        const file = `${dir}/${page.replace(/[/.]/g, "_")}_${i}.ts`;
        await Deno.writeTextFile(file, code);
        files.push(file);
      }
    }
    expect(files.length).toBeGreaterThanOrEqual(2);
    // The samples import `ptemplate-operator/…`, which this checkout's deno.json maps to itself.
    const checked = await new Deno.Command(Deno.execPath(), {
      args: ["check", "--quiet", `--config=${new URL("deno.json", root).pathname}`, ...files],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const errors = new TextDecoder().decode(checked.stderr);
    expect({ code: checked.code, errors }).toEqual({ code: 0, errors: "" });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the README's plugin gives a labelled Deployment its Service, and no other", async () => {
  const [sample] = blocks(read("README.md"), "ts");
  const dir = await Deno.makeTempDir({ prefix: "readme-plugin-" });
  try {
    await Deno.writeTextFile(`${dir}/expose.ts`, sample.code);
    const { expose } = await import(`file://${dir}/expose.ts`) as {
      expose: Plugin<Deployment, true>;
    };
    expect(expose.for).toBe(DEPLOYMENT);
    const deployment = (labels: Record<string, string>): Deployment => ({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: "shop", labels },
      spec: {
        selector: { matchLabels: { app: "web" } },
        template: { metadata: { labels: { app: "web" } } },
      },
    });
    const labelled = await reconcileOnce(expose, deployment({ expose: "true" }));
    expect(labelled.outcome.children).toEqual([expect.objectContaining({
      kind: "Service",
      metadata: { name: "web" },
      spec: expect.objectContaining({ selector: { app: "web" } }),
    })]);
    // Not labelled (or the label removed): no Service, so the runtime prunes one it made.
    const plain = await reconcileOnce(expose, deployment({}));
    expect(plain.outcome.children).toEqual([]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes. */
export function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
}

/** The anchors of a markdown page's headings (a repeated one gets `-1`, `-2`, … as on GitHub). */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const prose = text.replace(/^```[\s\S]*?^```/gm, "");
  for (const [, heading] of prose.matchAll(/^#+ (.+)$/gm)) {
    const anchor = anchorOf(heading);
    const n = seen.get(anchor) ?? 0;
    seen.set(anchor, n + 1);
    anchors.add(n ? `${anchor}-${n}` : anchor);
  }
  return anchors;
}

Deno.test("headings become the anchors GitHub makes", () => {
  expect(anchorOf("Isolation: `deno task bench:isolation`"))
    .toBe("isolation-deno-task-benchisolation");
  expect(anchorOf("V8's flags")).toBe("v8s-flags");
  expect(anchorOf("10,000 Ptemplates in three shards")).toBe("10000-ptemplates-in-three-shards");
  expect(anchorOf("What one idle watch costs: `bench/stream_cost.ts`"))
    .toBe("what-one-idle-watch-costs-benchstream_costts");
  expect([...anchorsOf("# A\n## B\n```\n# not a heading\n```\n## B\n")]).toEqual(["a", "b", "b-1"]);
});

Deno.test("every relative link in the docs points at a file, and a heading, that exist", () => {
  const broken: string[] = [];
  for (const page of PAGES) {
    const text = read(page).replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue;
      const [path, anchor] = target.split("#");
      const url = path ? new URL(path, new URL(page, root)) : new URL(page, root);
      let stat: Deno.FileInfo | undefined;
      try {
        stat = Deno.statSync(url);
      } catch {
        broken.push(`${page}: ${target} (no such file)`);
        continue;
      }
      if (anchor && stat.isFile && !anchorsOf(Deno.readTextFileSync(url)).has(anchor)) {
        broken.push(`${page}: ${target} (no such heading)`);
      }
    }
  }
  expect(broken).toEqual([]);
});

Deno.test("the admission bindings the guides say to delete are ones deploy/ installs", () => {
  const installed = new Set<string>();
  for (const file of ["deploy/leader_fence/leader_fence.yaml", "deploy/shards/shard_fence.yaml"]) {
    for (const doc of parseAllDocuments(read(file))) {
      const object = doc.toJS() as { kind: string; metadata: { name: string } };
      if (object.kind === "ValidatingAdmissionPolicyBinding") installed.add(object.metadata.name);
    }
  }
  const named = markdownUnder("docs").flatMap((page) =>
    [...read(page).matchAll(/kubectl delete validatingadmissionpolicybinding (\S+)/g)]
      .map((m) => m[1])
  );
  expect(named.length).toBeGreaterThanOrEqual(2);
  expect(named.filter((name) => !installed.has(name))).toEqual([]);
});
