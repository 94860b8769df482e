import { expect } from "expect";
import { stringify } from "yaml";
import { clusterConfigFrom, KubeconfigError, selectContext } from "./kubeconfig.ts";
import { inClusterConfig, loadClusterConfig } from "./load_config.ts";

const PEM_CA = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
const PEM_CERT = "-----BEGIN CERTIFICATE-----\nCERT\n-----END CERTIFICATE-----\n";
const PEM_KEY = "-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n";
const b64 = (text: string) => btoa(text);

function kubeconfig(parts: {
  current?: string;
  clusters?: Record<string, unknown>;
  users?: Record<string, unknown>;
  contexts?: Record<string, unknown>;
}): string {
  const list = (m: Record<string, unknown> | undefined, key: string) =>
    Object.entries(m ?? {}).map(([name, value]) => ({ name, [key]: value }));
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    "current-context": parts.current,
    clusters: list(parts.clusters, "cluster"),
    users: list(parts.users, "user"),
    contexts: list(parts.contexts, "context"),
  });
}

async function tempTree(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "kubeconfig-test-" });
  for (const [path, text] of Object.entries(files)) {
    const full = `${dir}/${path}`;
    await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
    await Deno.writeTextFile(full, text);
  }
  return dir;
}

Deno.test("kubeconfig: data fields are decoded; the context's namespace is the default", async () => {
  const text = kubeconfig({
    current: "dev",
    clusters: {
      c: { server: "https://10.1.2.3:6443/", "certificate-authority-data": b64(PEM_CA) },
    },
    users: { u: { "client-certificate-data": b64(PEM_CERT), "client-key-data": b64(PEM_KEY) } },
    contexts: { dev: { cluster: "c", user: "u", namespace: "team-a" } },
  });
  const config = await clusterConfigFrom(selectContext([{ path: "/x/config", text }]));
  expect(config).toMatchObject({
    server: "https://10.1.2.3:6443",
    caData: PEM_CA,
    clientCertData: PEM_CERT,
    clientKeyData: PEM_KEY,
    namespace: "team-a",
  });
  expect(config.source).toContain('context "dev"');
  expect(config.source).not.toContain("KEY");
});

Deno.test("kubeconfig: file paths resolve against the file that names them", async () => {
  const dir = await tempTree({
    "a/config": kubeconfig({
      current: "ctx",
      clusters: { c: { server: "https://a", "certificate-authority": "pki/ca.crt" } },
      contexts: { ctx: { cluster: "c", user: "u" } },
    }),
    "a/pki/ca.crt": PEM_CA,
    "b/config": kubeconfig({
      users: {
        u: { "client-certificate": "certs/u.crt", "client-key": "certs/u.key", tokenFile: "tok" },
      },
    }),
    "b/certs/u.crt": PEM_CERT,
    "b/certs/u.key": PEM_KEY,
  });
  try {
    const config = await loadClusterConfig({
      env: (name) => ({ KUBECONFIG: `${dir}/a/config:${dir}/missing:${dir}/b/config` })[name],
    });
    expect(config.caData).toBe(PEM_CA);
    expect(config.clientCertData).toBe(PEM_CERT);
    expect(config.clientKeyData).toBe(PEM_KEY);
    expect(config.tokenFile).toBe(`${dir}/b/tok`);
    expect(config.namespace).toBe("default");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("kubeconfig: merging keeps the first definition and the first current-context", () => {
  const first = kubeconfig({
    current: "one",
    clusters: { c: { server: "https://first" } },
    contexts: { one: { cluster: "c" }, two: { cluster: "c", namespace: "ns-two" } },
  });
  const second = kubeconfig({
    current: "two",
    clusters: { c: { server: "https://second" }, d: { server: "https://d" } },
    contexts: { three: { cluster: "d" } },
  });
  const sources = [{ path: "/1", text: first }, { path: "/2", text: second }];
  expect(selectContext(sources)).toMatchObject({
    contextName: "one",
    cluster: { server: "https://first" },
  });
  expect(selectContext(sources, { context: "three" })).toMatchObject({
    cluster: { server: "https://d" },
  });
  expect(selectContext(sources, { context: "two" }).namespace).toBe("ns-two");
});

Deno.test("kubeconfig: missing pieces are named with the fix", async () => {
  const base = { clusters: { c: { server: "https://a" } }, users: { u: {} } };
  const check = (text: string, context?: string) =>
    Promise.resolve().then(() =>
      clusterConfigFrom(selectContext([{ path: "/k", text }], { context }))
    );
  await expect(check(kubeconfig({ ...base, contexts: { x: { cluster: "c" } } })))
    .rejects.toThrow(/no current-context in \/k: pass --context <name> \(contexts: x\)/);
  await expect(check(kubeconfig({ ...base, current: "nope", contexts: { x: { cluster: "c" } } })))
    .rejects.toThrow(/context "nope" is not defined/);
  await expect(check(kubeconfig({ ...base, current: "x", contexts: { x: { cluster: "gone" } } })))
    .rejects.toThrow(/names cluster "gone", which is not defined or has no server/);
  await expect(
    check(kubeconfig({ ...base, current: "x", contexts: { x: { cluster: "c", user: "who" } } })),
  )
    .rejects.toThrow(/names user "who", which is not defined/);
  await expect(check(kubeconfig({
    clusters: base.clusters,
    users: { u: { "client-certificate-data": b64(PEM_CERT) } },
    current: "x",
    contexts: { x: { cluster: "c", user: "u" } },
  }))).rejects.toThrow(/has a client certificate but no key/);
  await expect(check(kubeconfig({
    clusters: base.clusters,
    users: { u: { "client-key": "/does/not/exist.key", "client-certificate-data": b64(PEM_CERT) } },
    current: "x",
    contexts: { x: { cluster: "c", user: "u" } },
  }))).rejects.toThrow(/cannot read client-key \/does\/not\/exist.key/);
  await expect(check(kubeconfig({
    clusters: base.clusters,
    users: { u: { "auth-provider": { name: "gcp" } } },
    current: "x",
    contexts: { x: { cluster: "c", user: "u" } },
  }))).rejects.toThrow(/auth-provider "gcp".*use an exec plugin/);
  await expect(check(":\n  - [")).rejects.toThrow(KubeconfigError);
});

Deno.test("loadClusterConfig: --kubeconfig must exist; nothing found lists what was tried", async () => {
  await expect(loadClusterConfig({ kubeconfig: "/no/such/file", env: () => undefined }))
    .rejects.toThrow(/--kubeconfig \/no\/such\/file: file not found/);
  const error = await loadClusterConfig({
    env: (name) => ({ HOME: "/nonexistent-home", KUBECONFIG: "/nope" })[name],
  }).catch((e) => e);
  expect(error).toBeInstanceOf(KubeconfigError);
  expect(error.message).toContain("$KUBECONFIG (/nope: none of the files exist)");
  expect(error.message).toContain("in-cluster (KUBERNETES_SERVICE_HOST/PORT unset)");
  expect(error.message).toContain("/nonexistent-home/.kube/config (missing)");
  expect(error.message).toContain("Pass --kubeconfig <file>");
});

Deno.test("inClusterConfig: token file (re-read), CA, namespace, IPv6 host", async () => {
  const dir = await tempTree({ token: "t0ken", "ca.crt": PEM_CA, namespace: "ops\n" });
  try {
    const env = (name: string) =>
      ({ KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" })[name];
    const config = await inClusterConfig({ env, serviceAccountDir: dir });
    expect(config).toMatchObject({
      server: "https://[fd00::1]:443",
      caData: PEM_CA,
      tokenFile: `${dir}/token`,
      namespace: "ops",
    });
    expect(config?.token).toBeUndefined();
    await Deno.remove(`${dir}/token`);
    await expect(inClusterConfig({ env, serviceAccountDir: dir })).rejects.toThrow(
      /token or ca.crt is missing/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
