/**
 * The guides and the tests cannot drift apart: every shell command the README, docs/,
 * bench/README.md and plugins/README.md show is run, exactly as written, by a test
 * (`runDocumented("…")`, `startDocumented("…")`, or `documented("…")` handed to those), or NOT_RUN
 * says why not; and a comment that sends the reader to a guide's section names one that exists.
 */
import { expect } from "expect";
import { documentedCommands, NOT_RUN, shellWords } from "./fixtures/documented_commands.ts";

const root = new URL("../", import.meta.url);

/** Every file under `folder` ending in `suffix`, as paths from the repository's root. */
async function filesUnder(folder: string, suffix: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(new URL(`${folder}/`, root))) {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory && !["node_modules", "toolchain"].includes(entry.name)) {
      found.push(...await filesUnder(path, suffix));
    } else if (entry.isFile && entry.name.endsWith(suffix)) {
      found.push(path);
    }
  }
  return found;
}

/** The commands tests name with documented/runDocumented/startDocumented, as literals, by file. */
async function commandsRunByTests(): Promise<Map<string, string>> {
  const literal =
    /(?:documented|runDocumented|startDocumented)\(\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`$]*`)/g;
  const run = new Map<string, string>();
  // Not the helpers' own files: their docs show the calls as examples.
  const helpers = ["tests/fixtures/documented_commands.ts", "tests/documented_commands_test.ts"];
  for (const file of await filesUnder("tests", ".ts")) {
    if (helpers.includes(file)) continue;
    const text = await Deno.readTextFile(new URL(file, root));
    for (const [, quoted] of text.matchAll(literal)) {
      const inner = quoted.slice(1, -1);
      const value = quoted[0] === '"'
        ? JSON.parse(quoted)
        : quoted[0] === "'"
        ? JSON.parse(`"${inner.replace(/\\'/g, "'").replace(/"/g, '\\"')}"`)
        : inner;
      run.set(value, file);
    }
  }
  return run;
}

Deno.test("every command the guides show is run by a test as written, or said why not", async () => {
  const documented = documentedCommands();
  expect(documented.length).toBeGreaterThan(10);
  const run = await commandsRunByTests();
  const uncovered = documented.filter(({ command }) => !run.has(command) && !NOT_RUN[command]);
  expect(uncovered).toEqual([]);
  // Nothing stale: what tests run and what is excused is still in the guides.
  const shown = new Set(documented.map((d) => d.command));
  expect([...run.keys(), ...Object.keys(NOT_RUN)].filter((c) => !shown.has(c))).toEqual([]);
  // Excused only for a reason, and not also run.
  for (const [command, reason] of Object.entries(NOT_RUN)) {
    expect({ command, reason: reason.length > 20, run: run.has(command) })
      .toEqual({ command, reason: true, run: false });
  }
});

Deno.test("commands are read as a shell reads them", () => {
  expect(shellWords(`kubectl patch guest ada --type=json -p '[{"op":"remove"}]'`)).toEqual([
    "kubectl",
    "patch",
    "guest",
    "ada",
    "--type=json",
    "-p",
    '[{"op":"remove"}]',
  ]);
  expect(shellWords(`a "b c" '' d`)).toEqual(["a", "b c", "", "d"]);
  const commands = documentedCommands().map((c) => c.command);
  // Continuations are joined and comments dropped.
  expect(commands).toContainEqual(expect.stringMatching(/^deno task bundle --version \S+ --image/));
  expect(commands.filter((c) => c.includes("#") && !c.includes("'"))).toEqual([]);
});

Deno.test("a comment that names a guide's section names one that exists", async () => {
  const references: { file: string; guide: string; section: string }[] = [];
  const folders = ["bench", "cli", "crds", "docs", "kube", "plugins", "reconcilers", "runtime"];
  for (const folder of [...folders, "testing", "util"]) {
    const exists = await Deno.stat(new URL(`${folder}/`, root)).then(() => true, () => false);
    if (exists) {
      for (const file of await filesUnder(folder, ".ts")) references.push(...refs(file));
    }
  }
  for (const file of ["main.ts", "mod.ts", "dev.ts"]) references.push(...refs(file));
  expect(references.length).toBeGreaterThan(0);
  const missing = [];
  for (const reference of references) {
    const text = await Deno.readTextFile(new URL(reference.guide, root)).catch(() => "");
    const headings = [...text.matchAll(/^#+ (.+)$/gm)].map((m) => m[1].trim());
    if (!headings.includes(reference.section)) missing.push(reference);
  }
  expect(missing).toEqual([]);

  /** `guide.md, "Section"` in a file's comments, a comment wrapped over lines read as one. */
  function refs(file: string) {
    const text = Deno.readTextFileSync(new URL(file, root))
      .replace(/\n\s*(?:\*(?!\/)|\/\/)\s*/g, " ");
    return [...text.matchAll(/([\w./-]+\.md),? "([^"]+)"/g)].map((m) => ({
      file,
      guide: m[1],
      section: m[2],
    }));
  }
});
