import { expect } from "expect";
import { ApiError } from "../../kube/errors.ts";
import { NetworkError } from "../../kube/network_error.ts";
import { StartupError } from "../../util/startup_error.ts";
import { type FailureContext, judgeFailure } from "./watch_failure.ts";

const api = (code: number) => new ApiError({ code, reason: "R", message: "said so" });
const at = (over: Partial<FailureContext> = {}): FailureContext => ({
  listing: false,
  synced: true,
  resource: { group: "apps", plural: "deployments" },
  ...over,
});

Deno.test("a required kind that may not be listed before the first sync stops the start, naming the rule", () => {
  const verdict = judgeFailure(api(403), at({ listing: true, synced: false, namespace: "ns" }));
  expect(verdict.next).toBe("give up");
  const error = (verdict as { error: Error }).error;
  expect(error).toBeInstanceOf(StartupError);
  expect(error.message).toMatch(
    /^403 R: said so; grant it: .*"apps".*"deployments".*"list", "watch".*namespace ns/,
  );
  // Once synced, or on a watch, a 403 of a required kind is a failure to retry, not a stop.
  expect(judgeFailure(api(403), at({ listing: true })).next).toBe("retry");
  expect(judgeFailure(api(403), at({ synced: false })).next).toBe("retry");
});

Deno.test("a kind refused as gone is looked for by a list after a watch, held missing after a list", () => {
  expect(judgeFailure(api(404), at())).toEqual({
    next: "look",
    behind: "its watch failed: 404 R: said so",
  });
  expect(judgeFailure(api(404), at({ listing: true, synced: false }))).toMatchObject({
    next: "missing",
    absence: "not served",
    warning: expect.stringMatching(/is its CRD installed/),
  });
  // A 403 of an optional kind is the same, whether synced or not: what reads it is off.
  expect(judgeFailure(api(403), at({ listing: true, synced: false, optional: true })))
    .toMatchObject({ next: "missing", absence: "not allowed", warning: /grant list and watch/ });
  expect(judgeFailure(api(403), at({ optional: true })).next).toBe("look");
});

Deno.test("an expired version or a replaced connection relists at once; anything else backs off", () => {
  expect(judgeFailure(api(410), at())).toEqual({
    next: "relist",
    why: "expired",
    behind: "its watch failed: 410 R: said so",
  });
  expect(judgeFailure(new NetworkError("replaced", "closed by us"), at({ listing: true })))
    .toEqual({ next: "relist", why: "replaced", behind: "listing failed: closed by us" });
  expect(judgeFailure(new NetworkError("reset", "reset by peer"), at())).toEqual({
    next: "retry",
    network: true,
    behind: "its watch failed: reset by peer",
  });
  expect(judgeFailure(api(500), at({ optional: true }))).toMatchObject({
    next: "retry",
    network: false,
  });
  expect(judgeFailure("a string thrown", at())).toEqual({
    next: "retry",
    network: false,
    behind: "its watch failed: a string thrown",
  });
});
