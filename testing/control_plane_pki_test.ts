import { expect } from "expect";
import { createControlPlanePki } from "./control_plane_pki.ts";

Deno.test("the PKI is X.509 v3 and Deno's TLS stack accepts the client pair", async () => {
  const pki = await createControlPlanePki();
  for (const pem of [pki.ca.cert, pki.serving.cert, pki.admin.cert]) {
    expect(pem).toMatch(/^-----BEGIN CERTIFICATE-----\n/);
  }
  expect(pki.serviceAccount.pub).toMatch(/^-----BEGIN PUBLIC KEY-----/);
  // createHttpClient parses the chain and key eagerly: a v1 cert or a bad key throws here.
  const client = Deno.createHttpClient({
    caCerts: [pki.ca.cert],
    cert: pki.admin.cert,
    key: pki.admin.key,
  });
  client.close();
});
