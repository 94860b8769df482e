import { expect } from "expect";
import { stringify } from "yaml";
import { clusterConfigFrom, KubeconfigError, selectContext } from "./kubeconfig.ts";
import { kubeconfigYaml } from "./kubeconfig_yaml.ts";
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
  const config = await clusterConfigFrom(await selectContext([{ path: "/x/config", text }]));
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

Deno.test("kubeconfig: what kubeconfigYaml writes (YAML's JSON form) reads back the same", async () => {
  const written = {
    server: "https://127.0.0.1:6443",
    caData: PEM_CA,
    token: "abc",
    namespace: "team-a",
    source: "test",
  };
  const text = kubeconfigYaml(written);
  expect(JSON.parse(text)).toMatchObject({ kind: "Config", "current-context": "ptemplate" });
  expect(await clusterConfigFrom(await selectContext([{ path: "/k", text }]))).toMatchObject({
    server: written.server,
    caData: PEM_CA,
    token: "abc",
    namespace: "team-a",
  });
});

Deno.test("kubeconfig: a file that only looks like JSON is YAML's to read, and so is its error", async () => {
  // A YAML flow mapping: unquoted keys, not JSON.
  const flow = "{apiVersion: v1, kind: Config, current-context: x, clusters: " +
    "[{name: c, cluster: {server: 'https://a'}}], contexts: [{name: x, context: {cluster: c}}]}";
  expect((await selectContext([{ path: "/k", text: flow }])).cluster.server).toBe("https://a");
  const secret = "s3cr3t-Tok3n-value";
  const broken = `{"users": [{"name": "u", "user": {"token": "${secret}"}]`;
  const error = await selectContext([{ path: "/k", text: broken }]).catch((e) => e);
  expect(error).toBeInstanceOf(KubeconfigError);
  expect(error.message).toMatch(/^\/k is not valid YAML/);
  expect(error.message).not.toContain(secret);
});

Deno.test("kubeconfig: merging keeps the first definition and the first current-context", async () => {
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
  expect(await selectContext(sources)).toMatchObject({
    contextName: "one",
    cluster: { server: "https://first" },
  });
  expect(await selectContext(sources, { context: "three" })).toMatchObject({
    cluster: { server: "https://d" },
  });
  expect((await selectContext(sources, { context: "two" })).namespace).toBe("ns-two");
});

Deno.test("kubeconfig: missing pieces are named with the fix", async () => {
  const base = { clusters: { c: { server: "https://a" } }, users: { u: {} } };
  const check = (text: string, context?: string) =>
    selectContext([{ path: "/k", text }], { context }).then(clusterConfigFrom);
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
  }))).rejects.toThrow(/the client-key of user "u" \/does\/not\/exist.key does not exist/);
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

Deno.test("kubeconfig: a malformed file is refused in our words, naming the field, never a value", async () => {
  const secret = "s3cr3t-Tok3n-value";
  const refused = async (doc: unknown) => {
    try {
      await selectContext([{ path: "/k", text: stringify(doc) }], { context: "x" });
    } catch (error) {
      expect(error).toBeInstanceOf(KubeconfigError);
      expect((error as Error).message).not.toContain(secret);
      return (error as Error).message;
    }
    throw new Error("accepted");
  };
  expect(await refused({ users: { u: { token: secret } } })).toMatch(
    /^\/k: users must be a list of entries with a name and a user, not a mapping/,
  );
  expect(await refused({ clusters: [{ name: "c", cluster: { server: 6443 } }] })).toMatch(
    /clusters\[0\]\.cluster\.server must be a string, not a number/,
  );
  expect(await refused({ users: [{ name: "u", user: { token: 12345 } }] })).toMatch(
    /users\[0\]\.user\.token must be a string, not a number/,
  );
  expect(await refused({ users: [{ user: { token: secret } }] })).toMatch(
    /users\[0\]\.name must be a non-empty string, not empty|users\[0\]\.name must be a non-empty string, not a undefined/,
  );
  expect(await refused({ contexts: ["x"] })).toMatch(/contexts\[0\] must be a mapping/);
  expect(await refused({ "current-context": ["x"] })).toMatch(
    /current-context must be a string, not a list/,
  );
  expect(
    await refused({
      users: [{ name: "u", user: { exec: { command: "p", args: "--token=" + secret } } }],
    }),
  )
    .toMatch(/users\[0\]\.user\.exec\.args must be a list of strings, not a string/);
  expect(
    await refused({
      users: [{ name: "u", user: { exec: { command: "p", env: [{ name: "T", value: 1 }] } } }],
    }),
  )
    .toMatch(/users\[0\]\.user\.exec\.env\[0\]\.value must be a string/);
  expect(await refused({ users: [{ name: "u", user: { exec: { args: [] } } }] }))
    .toMatch(/users\[0\]\.user\.exec\.command must be a non-empty string/);
  expect(
    await refused({ clusters: [{ name: "c", cluster: { "insecure-skip-tls-verify": "yes" } }] }),
  )
    .toMatch(/insecure-skip-tls-verify must be true or false, not a string/);
  expect(await refused([secret])).toMatch(
    /^\/k: the file must be a mapping \(a kubeconfig\), not a list/,
  );
});

Deno.test("kubeconfig: a server URL with credentials or a query, and a token that cannot be a header", async () => {
  const secret = "s3cr3t-Tok3n-value";
  const config = async (server: string, token = "abc") =>
    clusterConfigFrom(
      await selectContext([{
        path: "/k",
        text: kubeconfig({
          current: "x",
          clusters: { c: { server } },
          users: { u: { token } },
          contexts: { x: { cluster: "c", user: "u" } },
        }),
      }]),
    );
  const refused = async (promise: Promise<unknown>) => {
    const error = await promise.then(() => undefined, (e) => e);
    expect(error).toBeInstanceOf(KubeconfigError);
    expect(error.message).not.toContain(secret);
    return error.message as string;
  };
  expect(await refused(config(`https://admin:${secret}@10.0.0.1:6443`))).toMatch(
    /the server URL of cluster "c" \(not shown here\) has a user name or password in it/,
  );
  expect(await refused(config(`https://10.0.0.1:6443/?access_token=${secret}`))).toMatch(
    /has a query or fragment/,
  );
  expect(await refused(config(`ftp://${secret}`))).toMatch(/must start with https:\/\//);
  expect(await refused(config(`not a url ${secret}`))).toMatch(/is not a URL/);
  expect(await refused(config("https://10.0.0.1:6443", `${secret}\r\nX-Evil: 1`))).toMatch(
    /the token from user "u" in \/k has a character that cannot go in an HTTP header at position 19 of \d+ \(a carriage return\); it is not shown/,
  );
  expect((await config("https://10.0.0.1:6443/k8s/clusters/c-1/")).server).toBe(
    "https://10.0.0.1:6443/k8s/clusters/c-1",
  );
});
