/**
 * deploy/monitoring on its own, with the real promtool (built from the pinned Prometheus module)
 * and kubectl: the PrometheusRule passes `promtool check rules`; promtool's unit tests
 * (tests/monitoring/alerts_test.yaml) make every alert fire on its series and stay quiet on their
 * look-alikes, and fail when any metric an alert reads is misspelt; every dashboard query is valid
 * PromQL; `kubectl kustomize` renders the rule and the dashboard's ConfigMap from the JSON file as
 * it is; every alert links a runbook that exists. tests/monitoring_test.ts checks the names
 * against a running operator.
 */
import { expect } from "expect";
import { parse, stringify } from "yaml";
import type { Unstructured } from "../kube/object.ts";
import { findBinaries } from "../testing/binaries.ts";
import { binariesTest } from "../testing/integration_test_case.ts";
import { kustomize } from "./fixtures/manifests.ts";
import {
  ALERT_TESTS_FILE,
  alertRules,
  dashboard,
  DASHBOARD_FILE,
  dashboardQueries,
  METRICS_JOB,
  promtool,
  type RuleGroups,
  ruleGroups,
} from "./fixtures/monitoring.ts";
import { selectors } from "./fixtures/promql_selectors.ts";

const root = new URL("../", import.meta.url);
const RUNBOOKS = "https://github.com/ptemplate/ptemplate-operator/blob/main/";

/** Runs promtool's unit tests of the alerts against `groups` (by default the real ones). */
async function alertUnitTests(
  binary: string,
  groups: RuleGroups = ruleGroups(),
): Promise<{ success: boolean; output: string }> {
  const dir = await Deno.makeTempDir({ prefix: "alerts-" });
  try {
    await Deno.writeTextFile(`${dir}/rules.yaml`, stringify(groups));
    await Deno.copyFile(ALERT_TESTS_FILE, `${dir}/alerts_test.yaml`);
    return await promtool(binary, ["test", "rules", "alerts_test.yaml"], dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function checkRules(binary: string, groups: RuleGroups) {
  const dir = await Deno.makeTempDir({ prefix: "rules-" });
  try {
    await Deno.writeTextFile(`${dir}/rules.yaml`, stringify(groups));
    return await promtool(
      binary,
      ["check", "rules", "--lint=all", "--lint-fatal", "rules.yaml"],
      dir,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const promtoolBinary = async () => (await findBinaries({ names: ["promtool"] })).promtool;

await binariesTest("promtool check rules passes on the PrometheusRule, lint included", async () => {
  const { success, output } = await checkRules(await promtoolBinary(), ruleGroups());
  expect({ success, output }).toEqual({
    success: true,
    output: expect.stringContaining("SUCCESS"),
  });
});

await binariesTest(
  "promtool test rules: each alert fires on its series and is quiet on look-alikes",
  async () => {
    const { success, output } = await alertUnitTests(await promtoolBinary());
    expect({ success, output }).toEqual({
      success: true,
      output: expect.stringContaining("SUCCESS"),
    });
    // Each alert has a case where it fires and one where it stays quiet.
    const cases = (parse(Deno.readTextFileSync(ALERT_TESTS_FILE)).tests as {
      alert_rule_test: { alertname: string; exp_alerts?: unknown[] }[];
    }[]).flatMap((t) => t.alert_rule_test ?? []);
    for (const { alert } of alertRules()) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect({ alert, fires: mine.some((c) => c.exp_alerts?.length) }).toEqual({
        alert,
        fires: true,
      });
      expect({ alert, quiet: mine.some((c) => !c.exp_alerts?.length) }).toEqual({
        alert,
        quiet: true,
      });
    }
  },
);

await binariesTest("a misspelt metric anywhere in an alert fails its unit tests", async () => {
  const binary = await promtoolBinary();
  const groups = ruleGroups();
  const survivors: string[] = [];
  for (const [g, group] of groups.groups.entries()) {
    for (const [r, rule] of group.rules.entries()) {
      for (const selector of selectors(rule.expr)) {
        const { index, metric } = selector;
        const misspelt = structuredClone(groups);
        misspelt.groups[g].rules[r].expr = `${rule.expr.slice(0, index)}${metric}_misspelt${
          rule.expr.slice(index + metric.length)
        }`;
        const { success } = await alertUnitTests(binary, misspelt);
        if (success) survivors.push(`${rule.alert}: ${selector.text} at ${index}`);
      }
    }
  }
  expect(survivors).toEqual([]);
});

await binariesTest("every dashboard query is valid PromQL", async () => {
  const queries = dashboardQueries();
  expect(queries.length).toBeGreaterThan(30);
  const groups = {
    groups: [{
      name: "dashboard",
      rules: queries.map((q, i) => ({ record: `dashboard_query_${i}`, expr: q.expr })),
    }],
  };
  const { success, output } = await checkRules(await promtoolBinary(), groups);
  expect({ success, output }).toEqual({
    success: true,
    output: expect.stringContaining("SUCCESS"),
  });
});

await binariesTest(
  "deploy/monitoring renders the rule and the dashboard's ConfigMap, for the metrics job",
  async (binaries) => {
    const manifests = await kustomize(binaries.kubectl, "deploy/monitoring");
    const find = (kind: string) => manifests.filter((m) => m.kind === kind);
    // The PrometheusRule, as the file has it.
    const [rule] = find("PrometheusRule");
    expect(rule.spec).toEqual(ruleGroups());
    expect(rule.metadata?.namespace).toBe("ptemplate-operator-system");
    // The dashboard: the JSON file itself, in a ConfigMap Grafana's sidecar picks up by its label,
    // under one name for good.
    const dashboards = find("ConfigMap").filter((c) => c.metadata?.labels?.grafana_dashboard);
    expect(dashboards.map((c) => ({ name: c.metadata?.name, label: c.metadata?.labels }))).toEqual([
      {
        name: "ptemplate-operator-dashboard",
        label: expect.objectContaining({ grafana_dashboard: "1" }),
      },
    ]);
    expect(dashboards[0].data).toEqual({
      "ptemplate-operator.json": Deno.readTextFileSync(DASHBOARD_FILE),
    });
    // Every dashboard file is shipped.
    const folder = new URL("deploy/monitoring/dashboards/", root);
    const files = [...Deno.readDirSync(folder)].map((e) => e.name).sort();
    expect(files).toEqual(Object.keys(dashboards[0].data as object).sort());
    // The alerts select the job Prometheus gives the ServiceMonitor's targets: the Service's name.
    const [monitor] = find("ServiceMonitor") as (Unstructured & {
      spec: { selector: { matchLabels: Record<string, string> } };
    })[];
    const services = find("Service").filter((s) =>
      Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) =>
        s.metadata?.labels?.[k] === v
      )
    );
    expect(services.map((s) => s.metadata?.name)).toEqual([METRICS_JOB]);
    for (const { alert, expr } of alertRules()) {
      for (const { matchers } of selectors(expr)) {
        expect({ alert, matchers }).toEqual({
          alert,
          matchers: expect.stringContaining(`job="${METRICS_JOB}"`),
        });
      }
    }
  },
);

Deno.test("every alert links its runbook, which says what it means, how to confirm it, what to do", () => {
  const alerts = alertRules();
  const guide = Deno.readTextFileSync(new URL("docs/operating/metrics_and_alerts.md", root));
  for (const { alert, annotations, labels } of alerts) {
    const url = annotations?.runbook_url ?? "";
    expect({ alert, url }).toEqual({ alert, url: `${RUNBOOKS}docs/runbooks/${alert}.md` });
    const page = Deno.readTextFileSync(new URL(url.slice(RUNBOOKS.length), root));
    expect(page).toMatch(new RegExp(`^# ${alert}\\n`));
    for (const heading of ["## What it means", "## How to confirm", "## What to do"]) {
      expect({ alert, heading, found: page.includes(`\n${heading}\n`) }).toEqual({
        alert,
        heading,
        found: true,
      });
    }
    expect(["critical", "warning"]).toContain(labels?.severity);
    expect(annotations?.summary).toBeTruthy();
    expect(annotations?.description).toBeTruthy();
    expect(guide).toContain(`(../runbooks/${alert}.md)`);
  }
  // No runbook without its alert.
  const pages = [...Deno.readDirSync(new URL("docs/runbooks/", root))].map((e) => e.name);
  expect(pages.sort()).toEqual(alerts.map((a) => `${a.alert}.md`).sort());
});

Deno.test("the dashboard: a query in every panel, one data source variable, no overlaps", () => {
  const board = dashboard();
  expect(board.uid).toBe("ptemplate-operator");
  const ids = board.panels.map((p) => p.id);
  expect(new Set(ids).size).toBe(ids.length);
  const cells = new Map<string, string>();
  for (const panel of board.panels) {
    const { x, y, w, h } = panel.gridPos;
    expect({ panel: panel.title, fits: x >= 0 && w > 0 && x + w <= 24 }).toEqual({
      panel: panel.title,
      fits: true,
    });
    for (let i = x; i < x + w; i++) {
      for (let j = y; j < y + h; j++) {
        const taken = cells.get(`${i},${j}`);
        expect({ panel: panel.title, overlaps: taken }).toEqual({
          panel: panel.title,
          overlaps: undefined,
        });
        cells.set(`${i},${j}`, panel.title);
      }
    }
    if (panel.type === "row") continue;
    expect({ panel: panel.title, queries: Boolean(panel.targets?.length) }).toEqual({
      panel: panel.title,
      queries: true,
    });
    for (const target of [panel, ...panel.targets!]) {
      expect(target.datasource?.uid).toBe("${datasource}");
    }
  }
  const variables = board.templating.list;
  expect(variables.filter((v) => v.type === "datasource").map((v) => v.name)).toEqual([
    "datasource",
  ]);
});
