import { expect } from "expect";
import fc from "fast-check";
import { redactSecrets, safeExcerpt } from "./secret_redaction.ts";

const JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6IkFCQyJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLWJ5dGVz";

Deno.test("tokens of every shape are redacted; paths, addresses and UIDs are kept", () => {
  const cases: [string, string][] = [
    [`Authorization: Bearer ${JWT}`, "Authorization: Bearer [redacted]"],
    [`got token ${JWT} back`, "got token [redacted] back"],
    ["token: abcdef.0123456789abcdef", "token: [redacted]"],
    ['{"token":"s3cr3t-value"}', '{"token":"[redacted]"}'],
    ["password=hunter2", "password=[redacted]"],
    ["static token a1b2c3d4e5f6g7h8i9j0k1l2m3", "static token [redacted]"],
    [
      "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----",
      "[redacted]",
    ],
    // What a message needs to stay useful.
    ["open /home/me/.kube/config-2024-prod failed", "open /home/me/.kube/config-2024-prod failed"],
    ["https://127.0.0.1:6443 refused", "https://127.0.0.1:6443 refused"],
    ["uid 0b5e3c1a-1f2e-4d3c-8b7a-6f5e4d3c2b1a", "uid 0b5e3c1a-1f2e-4d3c-8b7a-6f5e4d3c2b1a"],
  ];
  for (const [text, expected] of cases) expect(redactSecrets(text)).toBe(expected);
});

Deno.test("no random token survives, wherever it is put", () => {
  fc.assert(
    fc.property(
      fc.stringMatching(/^[A-Za-z0-9]{12,40}$/).filter((t) => /\d/.test(t) && /[A-Za-z]/.test(t)),
      fc.constantFrom("", "error: ", "token: ", "Bearer ", "x "),
      fc.constantFrom("", " failed", "\n", '"'),
      (token, before, after) => {
        const padded = token.length >= 20 ? token : `${token}${"0a".repeat(10)}`;
        expect(redactSecrets(`${before}${padded}${after}`)).not.toContain(padded);
      },
    ),
  );
});

Deno.test("an excerpt is the first line only, redacted and short", () => {
  expect(safeExcerpt(`\n  error: denied\n${JWT}\nmore`)).toBe("error: denied");
  expect(safeExcerpt(`${JWT} is not valid`)).toBe("[redacted] is not valid");
  expect(safeExcerpt("x".repeat(500))).toHaveLength(201);
});
