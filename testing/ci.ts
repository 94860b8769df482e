/** Tells whether we run under CI, where integration tests must run rather than skip. */

/** True when `CI` is `true` or `1` (what GitHub Actions, GitLab and our `.ci/run` set). */
export function inCi(): boolean {
  return ["true", "1"].includes((Deno.env.get("CI") ?? "").toLowerCase());
}
