import { expect } from "expect";
import { Transport } from "./transport.ts";

const base = { server: "https://127.0.0.1:6443", namespace: "default", source: "kubeconfig /k" };

Deno.test("insecure-skip-tls-verify cannot be honoured per client in Deno: a clear error", () => {
  expect(() => new Transport({ ...base, insecureSkipTlsVerify: true }))
    .toThrow(
      /kubeconfig \/k sets insecure-skip-tls-verify.*certificate-authority.*--unsafely-ignore-certificate-errors/s,
    );
});

Deno.test("a server without scheme, and half a client certificate, are refused by name", () => {
  expect(() => new Transport({ ...base, server: "127.0.0.1:6443" })).toThrow(
    /must start with https:\/\//,
  );
  expect(() => new Transport({ ...base, clientCertData: "x" })).toThrow(
    /needs both its certificate and its key/,
  );
});
