/**
 * Requests cost the caller, not us: against the real operator (main.ts, the binary's
 * permissions), requests that declare 10 MB or 100 MB and send a few bytes, complete 100 MB
 * bodies with and without a length, and a thousand connections that never say hello, sent to its
 * webhook, metrics and probe ports, leave its resident memory (from /proc) within 20 MiB of where
 * it was and its file descriptors back where they were; meanwhile its probes answer every time
 * and a Ptemplate made during the attack is reconciled. Counts and states, not times: each
 * request is answered 413 or its connection closed, and each idle connection is closed by the
 * operator.
 */
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE } from "../crds/kmm_module.ts";
import { PTEMPLATE, PTEMPLATE_CRD } from "../crds/ptemplate.ts";
import type { Unstructured } from "../kube/object.ts";
import { DAEMON_SET, NAMESPACE } from "../kube/kinds.ts";
import { createServingPki } from "../testing/control_plane_pki.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";
import { usage } from "./fixtures/process_usage.ts";

const MIB = 1024 * 1024;

/** Writes `head` (and then `body` bytes, if any) and reads until the server closes. */
async function send(
  port: number,
  head: string,
  options: { tls?: string; bodyBytes?: number; chunked?: boolean } = {},
): Promise<string> {
  const conn = options.tls
    ? await Deno.connectTls({ hostname: "127.0.0.1", port, caCerts: [options.tls] })
    : await Deno.connect({ hostname: "127.0.0.1", port });
  const reading = (async () => {
    const chunks: string[] = [];
    const buffer = new Uint8Array(4096);
    try {
      for (;;) {
        const n = await conn.read(buffer);
        if (n === null) break;
        chunks.push(new TextDecoder().decode(buffer.subarray(0, n)));
      }
    } catch {
      // reset: what was read is the answer
    }
    return chunks.join("");
  })();
  const write = async (bytes: Uint8Array) => {
    for (let done = 0; done < bytes.length;) done += await conn.write(bytes.subarray(done));
  };
  try {
    await write(new TextEncoder().encode(head));
    const block = new Uint8Array(MIB).fill(0x61);
    const chunkHead = new TextEncoder().encode(`${MIB.toString(16)}\r\n`);
    const crlf = new TextEncoder().encode("\r\n");
    for (let sent = 0; sent < (options.bodyBytes ?? 0); sent += MIB) {
      if (options.chunked) await write(chunkHead);
      await write(block);
      if (options.chunked) await write(crlf);
    }
  } catch {
    // The server stopped reading and closed: as it should, once it has answered.
  }
  const answer = await reading;
  try {
    conn.close();
  } catch {
    // closed already
  }
  return answer;
}

await integrationTest("every server bounds what a caller may cost", {
  crds: [PTEMPLATE_CRD, KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "busy" } });
  const pki = await createServingPki();
  const certDir = await Deno.makeTempDir({ prefix: "exhaustion-certs-" });
  const { cert, key } = await pki.issue();
  await Deno.writeTextFile(`${certDir}/tls.crt`, cert);
  await Deno.writeTextFile(`${certDir}/tls.key`, key);
  const operator = OperatorRun.start([
    `--kubeconfig=${plane.adminKubeconfigPath}`,
    "--metrics-secure",
    `--metrics-cert-dir=${certDir}`,
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
    "--webhook-bind-address=127.0.0.1:0",
    `--webhook-cert-dir=${certDir}`,
  ]);
  const pid = operator.child.pid;
  let probing = true;
  const probes = { answered: 0, failed: 0 };
  let sampling = true;
  let peak = 0;
  try {
    const [webhooks, metrics, health] = [
      await operator.port("webhooks"),
      await operator.port("metrics"),
      await operator.port("probes"),
    ];
    const httpClient = Deno.createHttpClient({ caCerts: [pki.ca.cert] });
    // Warm up every path once (TLS, the review, the metrics' reviews), so the baseline has them.
    await eventually(async () =>
      expect((await fetch(`http://127.0.0.1:${health}/readyz`)).status).toBe(200)
    );
    for (let i = 0; i < 3; i++) {
      const convert = await fetch(`https://127.0.0.1:${webhooks}/convert`, {
        method: "POST",
        client: httpClient,
        body: JSON.stringify({
          apiVersion: "apiextensions.k8s.io/v1",
          kind: "ConversionReview",
          request: { uid: "u", desiredAPIVersion: "pt.example.com/v1beta1", objects: [] },
        }),
      });
      expect(convert.status).toBe(200);
      await convert.body?.cancel();
      const scrape = await fetch(`https://127.0.0.1:${metrics}/metrics`, { client: httpClient });
      expect(scrape.status).toBe(401);
      await scrape.body?.cancel();
    }
    httpClient.close();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const baseline = await usage(pid);
    // The peak over the whole attack, and each shape's, for the record.
    const peaks: Record<string, number> = {};
    let shape = "";
    const sampler = usage(pid, ({ rss }) => {
      peak = Math.max(peak, rss);
      peaks[shape] = Math.max(peaks[shape] ?? 0, rss);
      return sampling;
    });
    const attack = (name: string, fn: () => Promise<void>) =>
      step(name, () => {
        shape = name.split(":")[0];
        return fn();
      });
    const prober = (async () => {
      while (probing) {
        const response = await fetch(`http://127.0.0.1:${health}/readyz`).catch(() => undefined);
        if (response?.status === 200) probes.answered++;
        else probes.failed++;
        await response?.body?.cancel();
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();

    await attack("100 requests declare 10 MB and send 11 bytes: each refused at once", async () => {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          send(
            i % 2 ? webhooks : metrics,
            `${i % 2 ? "POST /convert" : "GET /metrics"} HTTP/1.1\r\nHost: x\r\n` +
              "Content-Length: 10000000\r\n\r\nhello world",
            { tls: pki.ca.cert },
          )),
      );
      // Answered 413, or (past the per-caller connection cap) closed before a word.
      expect(answers.filter((a) => a !== "" && !a.startsWith("HTTP/1.1 413"))).toEqual([]);
      expect(answers.filter((a) => a.startsWith("HTTP/1.1 413")).length).toBeGreaterThan(50);
    });

    await attack("10 declare 100 MB: refused before a byte is read", async () => {
      const answers = await Promise.all(
        Array.from({ length: 10 }, () =>
          send(
            webhooks,
            "POST /validate/status-aggregator HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n{",
            { tls: pki.ca.cert },
          )),
      );
      expect(answers.every((a) => a.startsWith("HTTP/1.1 413"))).toBe(true);
      expect(answers[0]).toContain("a body of at most 7340032 bytes, not 100000000");
    });

    await attack("a complete 100 MB body: answered, and not read", async () => {
      const answer = await send(
        webhooks,
        "POST /convert HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n",
        { tls: pki.ca.cert, bodyBytes: 100 * MIB },
      );
      expect(answer).toMatch(/^HTTP\/1\.1 413/);
    });

    await attack(
      "1000 connections that never say hello are all closed by the operator",
      async () => {
        const ports = [webhooks, metrics, health];
        const connections = await Promise.all(
          Array.from(
            { length: 1000 },
            (_, i) => Deno.connect({ hostname: "127.0.0.1", port: ports[i % 3] }),
          ),
        );
        // Meanwhile a Ptemplate is made, and reconciled.
        await admin.create(PTEMPLATE, {
          metadata: { name: "during", namespace: "busy" },
          spec: { selector: { role: "worker" } },
        } as Unstructured);
        // Each read ends when the operator closes the connection: refused at once past the caps,
        // or at the handshake deadline.
        const closed = await Promise.all(connections.map(async (conn) => {
          try {
            return await conn.read(new Uint8Array(1)) === null;
          } catch {
            return true;
          } finally {
            try {
              conn.close();
            } catch {
              // closed already
            }
          }
        }));
        expect(closed.filter((c) => !c)).toEqual([]);
        await eventually(() => admin.get(DAEMON_SET, "during-consumer", { namespace: "busy" }));
      },
    );

    await step("memory stayed within 20 MiB; descriptors return; probes never failed", async () => {
      // The operator's own connections to the API server may come and go: a little slack.
      await eventually(
        async () => expect((await usage(pid)).fds).toBeLessThanOrEqual(baseline.fds + 3),
        {
          timeoutMs: 60_000,
        },
      );
      sampling = false;
      await sampler;
      probing = false;
      await prober;
      const mib = (bytes: number) => `${((bytes - baseline.rss) / MIB).toFixed(1)} MiB`;
      const each = Object.entries(peaks).map(([name, rss]) => `${name}: +${mib(rss)}`);
      console.log(
        `RSS baseline ${(baseline.rss / MIB).toFixed(1)} MiB, peak +${mib(peak)} ` +
          `(${each.join("; ")}); fds baseline ${baseline.fds}; probes ${probes.answered} ` +
          `answered, ${probes.failed} failed`,
      );
      expect(peak - baseline.rss).toBeLessThan(20 * MIB);
      expect(probes.failed).toBe(0);
      expect(probes.answered).toBeGreaterThan(10);
    });

    await step("100 MB without a length: read as it comes, cut off at the limit", async () => {
      // Reading up to the 7 MiB limit is what a body may cost, so memory is not the measure
      // here (see WEBHOOK_LIMITS); the answer is, and the connection's end.
      const answer = await send(
        webhooks,
        "POST /convert HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
        { tls: pki.ca.cert, bodyBytes: 100 * MIB, chunked: true },
      );
      expect(answer).toMatch(/^HTTP\/1\.1 413/);
      expect(answer).toContain("a body of at most 7340032 bytes");
    });
  } finally {
    sampling = false;
    probing = false;
    expect((await operator.stop()).code).toBe(0);
    await Deno.remove(certDir, { recursive: true });
  }
});
