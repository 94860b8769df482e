import { expect } from "expect";
import denoJson from "../../deno.json" with { type: "json" };
import { permissionFlags } from "./permission_set_flags.ts";
import { operatorFiles, RELEASE_URL, RUNTIME_IMPORTS } from "./scaffold_operator.ts";
import { parse } from "yaml";
import { DENO_VERSION, VERSION } from "../release/version.ts";

const config = (runtime: string) =>
  JSON.parse(
    operatorFiles({ name: "backup-operator", domain: "backup.example.com", runtime })
      .find((f) => f.path === "deno.json")!.text,
  );

Deno.test("a new operator's repository: its files, its identity, its tasks", () => {
  const files = operatorFiles({
    name: "backup-operator",
    domain: "backup.example.com",
    runtime: "../ptemplate-operator/",
  });
  expect(files.map((f) => f.path).sort()).toEqual(
    [
      ".dockerignore",
      ".github/workflows/ci.yml",
      ".github/workflows/release.yml",
      ".gitignore",
      "Containerfile",
      "README.md",
      "catalog.ts",
      "crds.ts",
      "crds_test.ts",
      "deno.json",
      "deploy/core/deployment.yaml",
      "deploy/core/kustomization.yaml",
      "deploy/core/metrics_reader_role.yaml",
      "deploy/core/metrics_service.yaml",
      "deploy/core/namespace.yaml",
      "deploy/core/network_policy.yaml",
      "deploy/core/service_account.yaml",
      "deploy/kustomization.yaml",
      "deploy/monitoring/kustomization.yaml",
      "deploy/monitoring/prometheus_role_binding.yaml",
      "deploy/monitoring/service_monitor.yaml",
      "deploy/rbac/kustomization.yaml",
      "deploy/rbac/rbac.yaml",
      "deploy_test.ts",
      "main.ts",
      "operator.ts",
      ".gitignore",
    ].filter((p, i, all) => all.indexOf(p) === i).sort(),
  );
  const text = (path: string) => files.find((f) => f.path === path)!.text;
  expect(text("operator.ts")).toContain(
    'name: "backup-operator",\n  domain: "backup.example.com",',
  );
  // Nothing of ours in what it installs: every name is its own.
  for (const file of files.filter((f) => f.path.startsWith("deploy/"))) {
    expect({ path: file.path, ours: /ptemplate/.test(file.text) }).toEqual({
      path: file.path,
      ours: false,
    });
  }
  expect(text("deploy/core/deployment.yaml")).toContain("serviceAccountName: backup-operator\n");
  expect(text("deploy/kustomization.yaml")).toContain("newTag: v0.1.0\n");
  const { tasks, imports } = config("../ptemplate-operator/");
  expect(Object.keys(tasks)).toEqual([
    "test",
    "check",
    "start",
    "compile",
    "crds",
    "rbac",
    "install",
    "bundle",
    "new",
  ]);
  expect(tasks.rbac.command).toMatch(/ main\.ts rbac$/);
  expect(tasks.install.command).toMatch(/ main\.ts install$/);
  expect(tasks.bundle.command).toMatch(
    /--allow-write=bundle,bundle\.Dockerfile,catalog .* main\.ts bundle$/,
  );
  expect(tasks.crds.command).toContain("--allow-write=crds,plugins,deploy/rbac crds.ts");
  // The binary's permissions are ours, exactly, our sets written out as flags (it has no sets of
  // its own); the tests' too (expect reads CI's variables).
  const flags = (command: string) =>
    command.split(" ").filter((w) => /^(-P|--permission-set|--allow|--deny|--ignore)/.test(w));
  const ours = (task: "start" | "compile" | "test") =>
    permissionFlags(denoJson.tasks[task].command, denoJson.permissions);
  expect(flags(tasks.start.command)).toEqual(ours("start"));
  expect(flags(tasks.compile.command)).toEqual(ours("compile"));
  expect(flags(tasks.test.command)).toEqual(ours("test"));
  expect(tasks.test.command).toContain("--allow-env ");
  expect(tasks.start.command).toContain(" --allow-env=KUBECONFIG,HOME,");
  expect(tasks.start.command).toContain(" --v8-flags=--max-semi-space-size=");
  expect(tasks.bundle.command).not.toContain("--allow-env");
  expect(tasks.compile.command).toContain("--output dist/backup-operator main.ts");
  // A plugin isolated by the binary runs in its Worker module, which nothing imports statically.
  expect(tasks.compile.command).toContain(
    "--include ../ptemplate-operator/runtime/isolation/plugin_worker.ts",
  );
  expect(tasks.new.command).toMatch(
    /--allow-write=plugins,catalog\.ts,crds,deploy\/rbac,examples \.\.\/ptemplate-operator\/main\.ts new$/,
  );
  // Every package the runtime imports, at our versions, and the runtime where it was said to be.
  expect(imports).toEqual({
    "ptemplate-operator/": "../ptemplate-operator/",
    ...Object.fromEntries(
      RUNTIME_IMPORTS.map((n) => [n, (denoJson.imports as Record<string, string>)[n]]),
    ),
  });
});

Deno.test("from a release URL: imported from this version's tag, fetched by the tests too", () => {
  expect(RELEASE_URL).toBe(
    `https://raw.githubusercontent.com/ptemplate/ptemplate-operator/v${VERSION}/`,
  );
  const { tasks, imports } = config(RELEASE_URL);
  expect(imports["ptemplate-operator/"]).toBe(RELEASE_URL);
  expect(tasks.test.command).toContain(
    "--allow-net=127.0.0.1,localhost,raw.githubusercontent.com ",
  );
  expect(tasks.new.command).toContain(`${RELEASE_URL}main.ts new`);
  // The bundle is made from the runtime's deploy/core, read from there.
  expect(tasks.bundle.command).toContain("--allow-net=raw.githubusercontent.com ");
});

Deno.test("its image builds with its compile task, the runtime in the build where the import map looks", () => {
  const containerfile = (runtime: string) =>
    operatorFiles({ name: "backup-operator", domain: "backup.example.com", runtime })
      .find((f) => f.path === "Containerfile")!.text;
  const sibling = containerfile("../ptemplate-operator/");
  expect(sibling).toContain("WORKDIR /build/src/operator\n");
  expect(sibling).toContain("COPY --from=runtime . /build/src/ptemplate-operator\n");
  expect(sibling).toContain("--build-context runtime=../ptemplate-operator ");
  expect(sibling).toContain("tasks.compile.command");
  expect(sibling).toContain('ENTRYPOINT ["/backup-operator"]');
  expect(sibling).toContain("COPY --from=build /build/src/operator/dist/backup-operator ");
  expect(sibling).toContain(`ARG DENO_VERSION=${DENO_VERSION}\n`);
  // From a URL, nothing to copy: the compile fetches it.
  const released = containerfile(RELEASE_URL);
  expect(released).not.toContain("--from=runtime");
  expect(released).not.toContain("build-context");
});

Deno.test("its workflows: CI runs its check and test; a release refuses a tag that is not its version", () => {
  const files = operatorFiles({
    name: "backup-operator",
    domain: "backup.example.com",
    runtime: RELEASE_URL,
  });
  const workflow = (name: string) =>
    parse(files.find((f) => f.path === `.github/workflows/${name}.yml`)!.text);
  const ci = workflow("ci");
  const runs = (job: { steps: { run?: string }[] }) => job.steps.map((s) => s.run ?? "");
  expect(runs(ci.jobs.test)).toEqual(expect.arrayContaining(["deno task check", "deno task test"]));
  expect(ci.env.DENO_VERSION).toBe(DENO_VERSION);
  const release = workflow("release");
  expect(Object.keys(release.jobs)).toEqual(["test", "binaries", "image", "publish"]);
  const gate = runs(release.jobs.test).join("\n");
  expect(gate).toContain('[ "${GITHUB_REF_NAME}" != "v${version}" ]');
  // Every task a workflow runs is one the operator has.
  const { tasks } = config(RELEASE_URL);
  const used = JSON.stringify(release) + JSON.stringify(ci);
  for (const [, task] of used.matchAll(/deno task ([a-z:]+)/g)) {
    expect({ task, defined: task in tasks }).toEqual({ task, defined: true });
  }
  expect(used).toContain('"file":"Containerfile"');
  expect(used).toContain("sha256sum backup-operator-* > SHA256SUMS");
});

Deno.test("a name or domain that would make invalid objects is refused before anything is written", () => {
  expect(() => operatorFiles({ name: "Backup", domain: "backup.example.com", runtime: "./" }))
    .toThrow(/operator name "Backup"/);
  expect(() => operatorFiles({ name: "backup", domain: "localhost", runtime: "./" }))
    .toThrow(/operator domain "localhost"/);
});
