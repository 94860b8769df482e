/**
 * The binary's permission set is one design decision, used everywhere: `deno task start`, the
 * compiled binary, the image, and the integration tests that run the real operator. deno.json
 * holds it, with every other task's, as a named permission set (`-P=<name>`), each written once.
 */
import { expect } from "expect";
import { parse } from "yaml";
import { DENO_VERSION } from "../cli/release/version.ts";
import { permissionFlags, permissionSetOf, taskEnv } from "./fixtures/operator_command.ts";

const root = new URL("../", import.meta.url);
const read = (path: string) => Deno.readTextFileSync(new URL(path, root));
const denoJson = JSON.parse(read("deno.json"));

Deno.test("start and compile share one permission set, with no --allow-all", () => {
  expect([permissionSetOf("start"), permissionSetOf("compile")]).toEqual(["operator", "operator"]);
  const start = permissionFlags("start");
  expect(permissionFlags("compile")).toEqual(start);
  expect(start.length).toBeGreaterThan(0);
  expect(start.some((f) => f === "-A" || f === "--allow-all")).toBe(false);
  expect(start.filter((f) => f.startsWith("--allow-write"))).toEqual([]);
  // Each one is explained where people look: the deploy guide's table of them.
  const guide = read("docs/guides/deploy.md");
  for (const flag of start) expect(guide).toContain(`| \`${flag}\``);
});

Deno.test("deno.json: each task that runs code names a permission set, and no list is written twice", () => {
  const sets: Record<string, Record<string, unknown>> = denoJson.permissions;
  for (const [name, task] of Object.entries<string | { command: string }>(denoJson.tasks)) {
    const command = typeof task === "string" ? task : task.command;
    if (!/^(?:\w+=\S+\s+)*deno (?:run|test|bench|compile)\s/.test(command)) continue;
    const set = permissionSetOf(name);
    expect({ name, set: set !== undefined && set in sets }).toEqual({ name, set: true });
    // A task may take a permission away (--deny-run), never grant one of its own.
    expect({ name, grants: command.match(/--allow-\S+|(?:^|\s)-A\b/g) ?? [] })
      .toEqual({ name, grants: [] });
  }
  const lists = Object.values(sets).flatMap((set) =>
    Object.values(set).filter(Array.isArray).map((list) => JSON.stringify(list))
  );
  expect(lists.filter((list, i) => lists.indexOf(list) !== i)).toEqual([]);
  expect([denoJson.test.permissions, denoJson.bench.permissions]).toEqual(["harness", "harness"]);
  // The unit tests run with the suite's set, less programs: a unit test that runs one fails.
  expect([permissionSetOf("test"), permissionSetOf("test:unit")]).toEqual(["harness", "harness"]);
  expect(denoJson.tasks["test:unit"].command).toContain(" --deny-run ");
});

Deno.test("integration tests run the real operator only with start's permissions", async () => {
  // Any test or fixture that builds a command mentioning main.ts, other than the one way in.
  // outside_plugin_test runs ours through the one way in, and an own binary's main.ts (someone
  // else's program, built on ours) with start's permissions too; the guides' commands
  // (`ptemplate-operator …`) and the user-path test's subcommands run a clone's main.ts with them.
  const allowed = new Set([
    "tests/packaging_test.ts",
    "tests/fixtures/operator_command.ts",
    "tests/outside_plugin_test.ts",
    "tests/fixtures/documented_commands.ts",
    "tests/user_paths_test.ts",
  ]);
  for (const path of allowed) {
    if (path !== "tests/packaging_test.ts") {
      expect({ path, start: read(path).includes('permissionFlags("start")') })
        .toEqual({ path, start: true });
    }
  }
  const offenders: string[] = [];
  for (const folder of ["tests", "tests/fixtures"]) {
    for await (const entry of Deno.readDir(new URL(`${folder}/`, root))) {
      const path = `${folder}/${entry.name}`;
      if (!entry.isFile || !entry.name.endsWith(".ts") || allowed.has(path)) continue;
      const text = read(path);
      if (text.includes("main.ts") && text.includes("new Deno.Command")) offenders.push(path);
    }
  }
  expect(offenders).toEqual([]);
  // The one way in reads the start task.
  expect(read("tests/fixtures/operator_command.ts")).toContain('permissionFlags("start")');
  expect(read("tests/fixtures/operator_command.ts")).toContain("spawnOperator([...args");
  expect(read("tests/deploy_test.ts")).toContain("OperatorRun.start(");
});

Deno.test("the Containerfile compiles with the compile task, onto distroless nonroot", () => {
  const file = read("deploy/Containerfile");
  expect(file).toMatch(
    /^FROM --platform=\$BUILDPLATFORM denoland\/deno:\$\{DENO_VERSION\} AS build$/m,
  );
  expect(file).toMatch(/^ARG DENO_VERSION=2\.9\.6$/m);
  expect(file).toContain("tasks.compile.command");
  expect(file).toMatch(/^FROM gcr\.io\/distroless\/cc-debian12:nonroot$/m);
  expect(file).toMatch(/^USER 65532:65532$/m);
  expect(file).toContain('ENTRYPOINT ["/ptemplate-operator"]');
  // The image runs with the environment the start task (and so every test and bench) runs with.
  const env = taskEnv("start");
  expect(Object.keys(env)).toEqual(["GLIBC_TUNABLES"]);
  for (const [name, value] of Object.entries(env)) expect(file).toContain(`ENV ${name}=${value}\n`);
});

Deno.test("the release workflow: tag = version, tests first, three platforms, checksums, latest", () => {
  const workflow = parse(read(".github/workflows/release.yml"));
  const { test, binaries, image, publish } = workflow.jobs;
  // Nothing is built before the tag is checked and the suite passed, the way CI runs it.
  const gate = test.steps.map((s: { run?: string }) => s.run ?? "").join("\n");
  // The check itself is cli/release/release_version.ts, run as the workflow runs it by
  // release_workflow_test.
  expect(gate).toContain(
    'deno run --allow-read cli/release/release_version.ts --tag "${GITHUB_REF_NAME}"',
  );
  expect(gate).toContain("bash .ci/run");
  expect([binaries.needs, image.needs]).toEqual(["test", "test"]);
  const targets = binaries.strategy.matrix.include.map((m: { target: string }) => m.target);
  expect(targets.sort()).toEqual([
    "aarch64-apple-darwin",
    "aarch64-unknown-linux-gnu",
    "x86_64-unknown-linux-gnu",
  ]);
  const steps = JSON.stringify(binaries.steps);
  expect(steps).toContain("npm install -g deno@${DENO_VERSION}");
  expect(workflow.env.DENO_VERSION).toBe(DENO_VERSION);
  expect(steps).toContain("tasks.compile.command");
  for (const smoke of [" version", " --help", " crds"]) expect(steps).toContain(smoke);
  const imageSteps = JSON.stringify(image.steps);
  expect(imageSteps).toContain("GITHUB_REPOSITORY_OWNER,,");
  const build = image.steps.find((s: { uses?: string }) =>
    s.uses?.startsWith("docker/build-push-action")
  );
  expect(build.with).toMatchObject({
    file: "deploy/Containerfile",
    platforms: "linux/amd64,linux/arm64",
  });
  expect(build.with.tags).toContain("${{ env.IMAGE }}:latest");
  const publishSteps = JSON.stringify(publish.steps);
  expect(publishSteps).toContain("sha256sum ptemplate-operator-* > SHA256SUMS");
  expect(publishSteps).toContain("dist/SHA256SUMS");
  // The notes are the version's CHANGELOG section; the bundle is built from deno.json's version.
  expect(publishSteps).toContain("cli/release/release_version.ts --notes > dist/NOTES.md");
  expect(imageSteps).toContain("version=$(jq -r .version deno.json)");
});

Deno.test("CI checks what reviewers check, then runs the README's test command", () => {
  const ci = read(".ci/run");
  const check = ci.indexOf("deno task check");
  const test = ci.indexOf("deno task test 2>&1");
  expect(check).toBeGreaterThan(0);
  expect(test).toBeGreaterThan(check);
  expect(read("README.md")).toContain("deno task test");
});
