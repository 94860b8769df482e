/**
 * Webhook certificates without cert-manager: the operator keeps a CA and a serving certificate in
 * a Secret of its namespace, renews the serving certificate before it expires (the CA, valid ten
 * years, stays, so nothing the API server trusts changes), and keeps the `caBundle` of its own
 * webhook configurations and CRD conversions equal to that CA. Every replica does this the same
 * way from the same Secret: creating it is a race one replica wins (the others read the winner's),
 * every update carries the resourceVersion it read, and a caBundle already right is not written.
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import { isApiError } from "../../kube/errors.ts";
import {
  CUSTOM_RESOURCE_DEFINITION,
  MUTATING_WEBHOOK_CONFIGURATION,
  SECRET,
  VALIDATING_WEBHOOK_CONFIGURATION,
} from "../../kube/kinds.ts";
import { createCa, issueCertificate, type KeyPair, notAfter } from "./certificate_authority.ts";
import { causeOf, type Logger, type ServingCertificate, WarningThrottle } from "../observe/mod.ts";

const YEAR_MS = 365 * 24 * 3600_000;

export interface SelfManagedCertificateOptions {
  client: KubeClient;
  /** Where the Secret lives: the operator's namespace. */
  namespace: string;
  secretName: string;
  /** Who keeps the Secret (its `app.kubernetes.io/managed-by` label): the operator's name. */
  managedBy: string;
  /** The names the API server calls us by: the webhook Service's DNS names (or 127.0.0.1). */
  hosts: { dns?: string[]; ips?: string[] };
  /** Our ValidatingWebhookConfigurations and MutatingWebhookConfigurations, by name. */
  webhookConfigurations: string[];
  /** CRDs whose conversion webhook is ours, by name. */
  crds: string[];
  /** The serving certificate's lifetime; a year. */
  servingLifetimeMs?: number;
  /** Renewed when less than this is left; a third of its lifetime. */
  renewBeforeMs?: number;
  /** How often the Secret and the caBundles are looked at again; 10 s. */
  checkEveryMs?: number;
  log: Logger;
}

interface TlsSecret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

const decode = (base64: string | undefined) =>
  base64 ? new TextDecoder().decode(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))) : "";
const encode = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));

/** A certificate source for the webhook server, kept by the operator itself. */
export function selfManagedCertificate(
  options: SelfManagedCertificateOptions,
): () => Promise<ServingCertificate | undefined> {
  const lifetime = options.servingLifetimeMs ?? YEAR_MS;
  const renewBefore = options.renewBeforeMs ?? lifetime / 3;
  const warnings = new WarningThrottle(options.log);
  let current: { ca: KeyPair; serving: KeyPair; expires: number } | undefined;
  let checkedAt = -Infinity;
  return async () => {
    const fresh = current && Date.now() - checkedAt < (options.checkEveryMs ?? 10_000) &&
      current.expires - Date.now() > renewBefore;
    if (current && fresh) return current.serving;
    // A failure waits for the next period as a success does: no retry every few seconds.
    checkedAt = Date.now();
    try {
      const pair = await ensureSecret(options, lifetime, renewBefore);
      current = { ...pair, expires: notAfter(pair.serving.cert).getTime() };
    } catch (error) {
      if (!current) throw error;
      // The certificate in hand still serves until it expires.
      warnings.warn(causeOf(error), "could not read or renew the webhook Secret: {error}", {
        error: (error as Error).message,
      });
      return current.serving;
    }
    try {
      await ensureCaBundles(options, current.ca.cert);
    } catch (error) {
      // Served all the same: a caBundle set earlier, or by hand, may still be right.
      warnings.warn(causeOf(error), "could not set the webhooks' caBundle: {error}", {
        error: (error as Error).message,
      });
    }
    return current.serving;
  };
}

async function ensureSecret(
  options: SelfManagedCertificateOptions,
  lifetime: number,
  renewBefore: number,
): Promise<{ ca: KeyPair; serving: KeyPair }> {
  const { client, namespace, secretName: name, log } = options;
  const serving = (ca: KeyPair) =>
    issueCertificate(ca, `CN=${options.hosts.dns?.[0] ?? "webhooks"}`, options.hosts, lifetime);
  for (let attempt = 0; attempt < 5; attempt++) {
    let secret: TlsSecret | undefined;
    try {
      secret = await client.get(SECRET, name, { namespace });
    } catch (error) {
      if (!isApiError(error, 404)) throw error;
    }
    if (!secret) {
      const ca = await createCa(`${name}-ca`, 10 * YEAR_MS);
      const pair = await serving(ca);
      try {
        await client.create(SECRET, {
          apiVersion: "v1",
          kind: "Secret",
          metadata: {
            name,
            namespace,
            labels: { "app.kubernetes.io/managed-by": options.managedBy },
          },
          type: "kubernetes.io/tls",
          data: secretData(ca, pair),
        });
        log.info("created the webhook certificate Secret {namespace}/{name}", { namespace, name });
        return { ca, serving: pair };
      } catch (error) {
        if (isApiError(error, 409)) continue; // another replica was first: take its
        throw error;
      }
    }
    const ca = { cert: decode(secret.data?.["ca.crt"]), key: decode(secret.data?.["ca.key"]) };
    const current = {
      cert: decode(secret.data?.["tls.crt"]),
      key: decode(secret.data?.["tls.key"]),
    };
    if (!ca.cert || !ca.key || !current.cert || !current.key) {
      throw new Error(
        `Secret ${namespace}/${name} lacks ca.crt, ca.key, tls.crt or tls.key: delete it and the ` +
          "operator makes a new one",
      );
    }
    if (notAfter(current.cert).getTime() - Date.now() > renewBefore) {
      return { ca, serving: current };
    }
    const renewed = await serving(ca);
    try {
      await client.patch(SECRET, name, {
        metadata: { resourceVersion: secret.metadata?.resourceVersion },
        data: secretData(ca, renewed),
      }, { namespace });
      log.info("renewed the webhook serving certificate in {namespace}/{name}", {
        namespace,
        name,
      });
      return { ca, serving: renewed };
    } catch (error) {
      if (isApiError(error, 409)) continue; // renewed meanwhile by another replica
      throw error;
    }
  }
  throw new Error(`Secret ${namespace}/${name} kept changing under us`);
}

function secretData(ca: KeyPair, serving: KeyPair): Record<string, string> {
  return {
    "ca.crt": encode(ca.cert),
    "ca.key": encode(ca.key),
    "tls.crt": encode(serving.cert),
    "tls.key": encode(serving.key),
  };
}

/** Sets `caBundle` where it is not `ca` yet: our webhook configurations and CRD conversions. */
async function ensureCaBundles(options: SelfManagedCertificateOptions, ca: string): Promise<void> {
  const { client, log } = options;
  const bundle = encode(ca);
  for (const resource of [VALIDATING_WEBHOOK_CONFIGURATION, MUTATING_WEBHOOK_CONFIGURATION]) {
    for (const name of options.webhookConfigurations) {
      type Config = KubeObject & { webhooks?: { clientConfig: { caBundle?: string } }[] };
      let config: Config;
      try {
        config = await client.get(resource, name);
      } catch (error) {
        if (isApiError(error, 404)) continue;
        throw error;
      }
      if (!config.webhooks?.some((w) => w.clientConfig.caBundle !== bundle)) continue;
      await client.patch(resource, name, {
        metadata: { resourceVersion: config.metadata?.resourceVersion },
        webhooks: config.webhooks.map((w) => ({
          ...w,
          clientConfig: { ...w.clientConfig, caBundle: bundle },
        })),
      });
      log.info("set the caBundle of {kind} {name}", { kind: resource.kind, name });
    }
  }
  for (const name of options.crds) {
    type Crd = KubeObject & {
      spec?: {
        conversion?: { strategy?: string; webhook?: { clientConfig?: { caBundle?: string } } };
      };
    };
    let crd: Crd;
    try {
      crd = await client.get(CUSTOM_RESOURCE_DEFINITION, name);
    } catch (error) {
      if (isApiError(error, 404)) continue;
      throw error;
    }
    const conversion = crd.spec?.conversion;
    if (
      conversion?.strategy !== "Webhook" || conversion.webhook?.clientConfig?.caBundle === bundle
    ) continue;
    await client.patch(CUSTOM_RESOURCE_DEFINITION, name, {
      metadata: { resourceVersion: crd.metadata?.resourceVersion },
      spec: { conversion: { webhook: { clientConfig: { caBundle: bundle } } } },
    });
    log.info("set the conversion caBundle of CustomResourceDefinition {name}", { name });
  }
}
