/**
 * Every flag and environment variable of `run`, each with values it takes and values it refuses:
 * a refusal is one line that names the flag or variable and the value, says why and what to give
 * instead. A flag added to the table without its row here does not type-check.
 */
import { expect } from "expect";
import { readEnvironment } from "../flags/environment.ts";
import { RUN, RUN_ENVIRONMENT } from "../command/flag_table.ts";
import { parseFlags, UsageError } from "../flags/flags.ts";
import { runFlagsProblem } from "./run_checks.ts";

const dir = Deno.makeTempDirSync({ prefix: "run-flags-" });
const file = `${dir}/kubeconfig`;
Deno.writeTextFileSync(file, "");
const missing = `${dir}/nowhere`;

interface Row {
  /** Values it takes. */
  takes: string[];
  /** Values it refuses, and what the refusal must say (besides the flag's name). */
  refuses: [string, RegExp][];
}

const EMPTY: [string, RegExp] = ["", /is empty: give a value .*or leave it out/];

const FLAGS: Record<keyof typeof RUN, Row> = {
  kubeconfig: {
    takes: [file],
    refuses: [EMPTY, [missing, /nowhere: file not found; give the path of a kubeconfig/], [
      dir,
      /is a directory, not a file/,
    ]],
  },
  context: { takes: ["prod"], refuses: [EMPTY] },
  "kube-api-qps": {
    takes: ["0.5", "1000"],
    refuses: [EMPTY, ["0", /must be above 0, not 0/], ["-1", /must be above 0, not -1/], [
      "many",
      /takes a number, not "many"/,
    ]],
  },
  "kube-api-burst": {
    takes: ["1", "2000"],
    refuses: [EMPTY, ["0", /must be at least 1, not 0/], ["1.5", /takes a whole number/]],
  },
  plugins: { takes: ["-kmm-module"], refuses: [EMPTY] },
  plugin: { takes: ["./x.ts"], refuses: [EMPTY] },
  "plugin-isolation": {
    takes: ["none", "worker"],
    refuses: [EMPTY, ["process", /takes one of none, worker, not "process"/]],
  },
  "reconcile-timeout": {
    takes: ["0.5", "60", "2147483"],
    refuses: [EMPTY, ["0", /must be above 0 and at most 2147483 seconds, not 0/], [
      "3000000",
      /at most 2147483 seconds, not 3000000/,
    ]],
  },
  "plugin-heap-limit": {
    takes: ["1", "256"],
    refuses: [EMPTY, ["0", /must be at least 1 MiB, not 0/], ["1.5", /takes a whole number/]],
  },
  namespace: {
    takes: ["team-a", "a,b", "0team"],
    refuses: [
      EMPTY,
      [
        "Bad_NS",
        /"Bad_NS" is not a namespace name, .*RFC 1123 label .*; for example --namespace=bad-ns$/,
      ],
      ["a".repeat(64), /no more than 63 characters/],
      ["team.a", /not a namespace name/],
    ],
  },
  "leader-elect": { takes: ["true", "false"], refuses: [["maybe", /takes true or false/]] },
  "leader-election-namespace": {
    takes: ["kube-system"],
    refuses: [EMPTY, [
      "Kube_System",
      /not a namespace name.*for example --leader-election-namespace=kube-system$/,
    ]],
  },
  "leader-election-id": {
    takes: ["my-operator.example.com", "a".repeat(253)],
    refuses: [
      EMPTY,
      [
        "Bad_Name!",
        /"Bad_Name!" is not a Lease name, which the API server would refuse: a lowercase RFC 1123 subdomain must .*; for example --leader-election-id=bad-name$/,
      ],
      ["a".repeat(254), /no more than 253 characters/],
    ],
  },
  shards: {
    takes: ["1", "256"],
    refuses: [EMPTY, ["0", /^--shards must be from 1 to 256 shards, not 0$/], [
      "257",
      /from 1 to 256 shards, not 257/,
    ]],
  },
  "metrics-bind-address": {
    takes: [":8443", "127.0.0.1:8080", "0", "[::1]:9000"],
    refuses: [EMPTY, ["everywhere", /"everywhere" is not host:port, :port or 0.*for example/], [
      ":70000",
      /is not host:port/,
    ]],
  },
  "metrics-secure": { takes: ["true"], refuses: [["yes", /takes true or false/]] },
  "metrics-cert-dir": {
    takes: [dir],
    refuses: [
      EMPTY,
      [missing, /nowhere: directory not found; mount the certificate's Secret/],
      [file, /is not a directory; mount/],
    ],
  },
  "health-probe-bind-address": { takes: [":8081"], refuses: [EMPTY, ["8081", /is not host:port/]] },
  "log-level": { takes: ["debug"], refuses: [EMPTY, ["loud", /takes one of debug, info/]] },
  "log-format": { takes: ["json"], refuses: [EMPTY, ["xml", /takes one of text, json, auto/]] },
  "webhook-bind-address": { takes: [":9443", "0"], refuses: [EMPTY, ["x:y", /not host:port/]] },
  "webhook-cert-dir": {
    takes: [dir],
    refuses: [EMPTY, ["/nonexistent", /\/nonexistent: directory not found; mount/]],
  },
  "webhook-cert-mode": {
    takes: ["dir", "self-managed"],
    refuses: [EMPTY, ["manual", /takes one of dir, self-managed/]],
  },
  "webhook-service": {
    takes: ["my-webhooks"],
    refuses: [EMPTY, [
      "9hooks",
      /not a Service name, .*DNS-1035 label.*for example --webhook-service=hooks$/,
    ]],
  },
  "dry-run": { takes: ["true", "false"], refuses: [["maybe", /true or false/]] },
  "dry-run-output": {
    takes: ["text", "json"],
    refuses: [EMPTY, ["yaml", /text, json/]],
  },
  "priority-queue": {
    takes: ["true", "false"],
    refuses: [["maybe", /true or false/]],
  },
  "resync-period": {
    takes: ["0.5", "36000"],
    refuses: [EMPTY, ["0", /must be above 0 and at most 2147483 seconds, not 0/], [
      "10h",
      /number/,
    ]],
  },
  "visit-history": {
    takes: ["1", "5000"],
    refuses: [EMPTY, ["0", /from 1 to 1000000 visits, not 0/], [
      "1.5",
      /takes a whole number, not "1.5"/,
    ]],
  },
  concurrency: {
    takes: ["1", "100"],
    refuses: [EMPTY, ["0", /from 1 to 100 workers per plugin, not 0/], [
      "many",
      /takes a whole number, not "many"/,
    ]],
  },
};

Deno.test("run: every flag takes good values and refuses bad ones in one line with the fix", () => {
  for (const [flag, row] of Object.entries(FLAGS)) {
    for (const value of row.takes) {
      expect(() => parseFlags([`--${flag}=${value}`], RUN)).not.toThrow();
    }
    expect(row.refuses.length).toBeGreaterThan(0);
    for (const [value, says] of row.refuses) {
      let error: unknown;
      try {
        parseFlags([`--${flag}=${value}`], RUN);
      } catch (e) {
        error = e;
      }
      expect({ flag, value, error }).toEqual({ flag, value, error: expect.any(UsageError) });
      const message = (error as Error).message;
      expect(message).toMatch(new RegExp(`^--${flag}\\b`));
      expect(message).not.toContain("\n");
      expect({ flag, value, message }).toEqual({
        flag,
        value,
        message: expect.stringMatching(says),
      });
    }
  }
});

const ENV: Record<keyof typeof RUN_ENVIRONMENT, Row> = {
  WATCH_NAMESPACE: {
    takes: ["", "team-a", "team-a, team-b"],
    refuses: [[
      "team-a,Team_B",
      /^WATCH_NAMESPACE "Team_B" is not a namespace name.*; for example "team-b"$/,
    ]],
  },
  POD_NAME: {
    takes: ["ptemplate-operator-7c9d6f5b8-x2x4z"],
    refuses: [["my pod", /^POD_NAME "my pod" is not a pod name.*; for example "my-pod"$/]],
  },
  KUBECONFIG: { takes: [`${file}:${missing}`], refuses: [] },
  KUBERNETES_SERVICE_HOST: { takes: ["10.0.0.1"], refuses: [] },
  KUBERNETES_SERVICE_PORT: {
    takes: ["443"],
    refuses: [["https", /^KUBERNETES_SERVICE_PORT must be from 1 to 65535, not https$/], [
      "0",
      /not 0/,
    ]],
  },
  HOME: { takes: ["/root"], refuses: [] },
};

Deno.test("run: the environment it reads is held to the same rules", () => {
  for (const [name, row] of Object.entries(ENV)) {
    for (const value of row.takes) {
      expect(() => readEnvironment(RUN_ENVIRONMENT, (n) => n === name ? value : undefined))
        .not.toThrow();
    }
    for (const [value, says] of row.refuses) {
      expect(() => readEnvironment(RUN_ENVIRONMENT, (n) => n === name ? value : undefined))
        .toThrow(says);
    }
  }
  expect(readEnvironment(RUN_ENVIRONMENT, (n) => n === "WATCH_NAMESPACE" ? " a, ,b " : undefined))
    .toEqual({ WATCH_NAMESPACE: ["a", "b"] });
});

Deno.test("run: flags that cannot work together are refused, naming both and the fix", () => {
  const problem = (args: string[], inCluster = false) => {
    const { values, given } = parseFlags(args, RUN);
    return runFlagsProblem(values, given, { inCluster });
  };
  const cases: [string[], RegExp | undefined, boolean?][] = [
    [["--shards=3", "--leader-elect=false"], /--shards .* cannot go with --leader-elect=false/],
    [
      ["--shards=3", `--leader-election-id=${"a".repeat(230)}`],
      /--leader-election-id "a+" has 230 characters: with --shards .* at most 229; shorten it/,
    ],
    [["--shards=3", `--leader-election-id=${"a".repeat(229)}`], undefined],
    [
      ["--leader-election-namespace=ops"],
      /--leader-election-namespace names the Lease of leader election, which is off on a workstation: add --leader-elect/,
    ],
    [["--leader-election-namespace=ops"], undefined, true],
    [
      ["--leader-elect=false", "--leader-election-id=x"],
      /--leader-election-id .* off \(--leader-elect=false\): add --leader-elect, or leave/,
    ],
    [["--leader-elect", "--leader-election-id=x"], undefined],
    [
      [`--metrics-cert-dir=${dir}`, "--metrics-secure=false"],
      /--metrics-cert-dir is for HTTPS; it cannot go with --metrics-secure=false/,
    ],
    [
      [`--metrics-cert-dir=${dir}`, "--metrics-secure", "--metrics-bind-address=0"],
      /--metrics-cert-dir is for \/metrics, which --metrics-bind-address=0 turns off/,
    ],
    [
      [`--webhook-cert-dir=${dir}`, "--webhook-bind-address=0"],
      /--webhook-cert-dir is for the webhooks, which --webhook-bind-address=0 turns off/,
    ],
    [
      [`--webhook-cert-dir=${dir}`, "--webhook-cert-mode=self-managed"],
      /--webhook-cert-dir .* but --webhook-cert-mode=self-managed makes them itself/,
    ],
    [
      ["--webhook-service=hooks"],
      /--webhook-service names the Service for self-managed certificates: add --webhook-cert-mode=self-managed/,
    ],
    [["--webhook-service=hooks", "--webhook-cert-mode=self-managed"], undefined],
    [
      ["--webhook-bind-address=:8081"],
      /--health-probe-bind-address and --webhook-bind-address are the same port \(8081\)/,
    ],
    [
      ["--metrics-secure", "--metrics-bind-address=:8081"],
      /--metrics-bind-address and --health-probe-bind-address are the same port \(8081\), but one is HTTPS/,
    ],
    // Plain metrics and probes share a server, as controller-runtime lets them.
    [["--metrics-bind-address=:8081"], undefined],
    [["--metrics-bind-address=127.0.0.1:9000", "--webhook-bind-address=127.0.0.2:9000"], undefined],
    [["--metrics-bind-address=:0", "--webhook-bind-address=:0"], undefined],
    [[], undefined],
    [[], undefined, true],
    // A dry run takes no Lease and serves no webhooks; in a cluster, it elects no leader.
    [["--dry-run"], undefined, true],
    [["--dry-run", "--dry-run-output=json"], undefined],
    [["--dry-run", "--leader-elect"], /--dry-run takes no Lease.*leave --leader-elect out/],
    [["--dry-run", "--shards=2"], /--dry-run takes no Lease.*leave --shards out/],
    [[`--dry-run`, `--webhook-cert-dir=${dir}`], /--dry-run serves no webhooks/],
    [["--dry-run-output=json"], /--dry-run-output .* add --dry-run, or leave/],
  ];
  for (const [args, says, inCluster] of cases) {
    const said = problem(args, inCluster);
    expect({ args, said }).toEqual({
      args,
      said: says ? expect.stringMatching(says) : undefined,
    });
  }
});
