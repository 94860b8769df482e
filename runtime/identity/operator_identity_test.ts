import { expect } from "expect";
import { defaultFinalizerOf, defineOperator, fieldManagerOf } from "./operator_identity.ts";
import { PTEMPLATE_OPERATOR } from "./ptemplate_operator.ts";

Deno.test("our identity keeps every name clusters already hold", () => {
  const ours = PTEMPLATE_OPERATOR;
  expect({ ...ours, version: "x" }).toEqual({
    name: "ptemplate-operator",
    domain: "pt.example.com",
    version: "x",
    description: "a Kubernetes operator for Ptemplate resources",
    image: "ghcr.io/ptemplate/ptemplate-operator",
    leaseName: "ptemplate-operator.pt.example.com",
    namespace: "ptemplate-operator-system",
    userAgent: `ptemplate-operator/${ours.version}`,
    objectDomain: "operator.ptemplate.dev",
    finalizerDomain: "operator.pt.example.com",
    pluginLabel: "operator.ptemplate.dev/plugin",
    hashAnnotation: "operator.ptemplate.dev/desired-hash",
    legacyFinalizerDomains: ["operator.ptemplate.dev"],
    bareFieldManagers: true,
    formerIdentities: [],
  });
  expect(fieldManagerOf(ours, "kmm-module")).toBe("kmm-module");
  // 0.2's name: after a rollback, 0.2 finalizes (and so frees) what this version finalized.
  expect(defaultFinalizerOf(ours, "guestbook")).toBe("operator.pt.example.com/guestbook");
});

Deno.test("a new operator's names are all its own, under <name>.<domain>", () => {
  const backup = defineOperator({
    name: "backup-operator",
    domain: "example.com",
    version: "1.2.3",
  });
  const other = defineOperator({
    name: "restore-operator",
    domain: "example.com",
    version: "1.2.3",
  });
  expect(backup).toMatchObject({
    leaseName: "backup-operator.example.com",
    namespace: "backup-operator-system",
    userAgent: "backup-operator/1.2.3",
    pluginLabel: "backup-operator.example.com/plugin",
    hashAnnotation: "backup-operator.example.com/desired-hash",
    finalizerDomain: "backup-operator.example.com",
    legacyFinalizerDomains: [],
    description: "a Kubernetes operator",
    image: "backup-operator",
  });
  // Two operators of one organisation (one domain), each with a plugin "backup": nothing shared.
  expect(fieldManagerOf(backup, "backup")).toBe("backup-operator/backup");
  expect(fieldManagerOf(other, "backup")).not.toBe(fieldManagerOf(backup, "backup"));
  expect(defaultFinalizerOf(other, "backup")).not.toBe(defaultFinalizerOf(backup, "backup"));
  expect(other.pluginLabel).not.toBe(backup.pluginLabel);
  expect(Object.isFrozen(backup)).toBe(true);
});

Deno.test("an established operator keeps its earlier finalizers' domain apart from its labels'", () => {
  const established = defineOperator({
    name: "backup-operator",
    domain: "example.com",
    version: "2.0.0",
    established: { objectDomain: "labels.example.com", finalizerDomain: "backup.example.com" },
  });
  expect(established.pluginLabel).toBe("labels.example.com/plugin");
  expect(defaultFinalizerOf(established, "backup")).toBe("backup.example.com/backup");
  expect(() =>
    defineOperator({
      name: "backup-operator",
      domain: "example.com",
      version: "2.0.0",
      established: { finalizerDomain: "Not_A_Domain" },
    })
  ).toThrow(/"Not_A_Domain" must be a DNS subdomain/);
});

Deno.test("a name, domain or version that would make invalid objects is refused, naming it", () => {
  const ok = { name: "backup-operator", domain: "backup.example.com", version: "0.1.0" };
  const refused = (change: Record<string, string>) => () => defineOperator({ ...ok, ...change });
  expect(refused({ name: "Backup" })).toThrow(/operator name "Backup" must be lower-case/);
  expect(refused({ name: "a".repeat(57) })).toThrow(/at most 56/);
  expect(refused({ name: "-x" })).toThrow(/operator name/);
  expect(refused({ domain: "localhost" })).toThrow(/DNS subdomain with a dot/);
  expect(refused({ domain: "Example.com" })).toThrow(/operator domain "Example.com"/);
  expect(refused({ domain: `${"a".repeat(63)}.`.repeat(4) + "com" })).toThrow(/domain/);
  expect(refused({ version: "v1" })).toThrow(/semantic version/);
  expect(refused({ image: "ghcr.io/acme/backup:v1" })).toThrow(/without a tag or digest/);
  expect(refused({ image: "Backup Operator" })).toThrow(/operator image/);
  expect(defineOperator({ ...ok, image: "localhost:5000/acme/backup" }).image).toBe(
    "localhost:5000/acme/backup",
  );
  expect(defineOperator({ ...ok, version: "1.0.0-rc.1+build.5" }).version).toBe(
    "1.0.0-rc.1+build.5",
  );
  // The domain alone fits, but with the name before it no longer prefixes a label.
  expect(refused({ domain: ["a", "b", "c", "d"].map((c) => c.repeat(60)).join(".") + ".de" }))
    .toThrow(/at most 253 characters .* shorten/);
});
