import { expect } from "expect";
import { HttpError } from "./http_error.ts";
import { type BodyBounds, BodyBudget, declaresBody, readBody } from "./request_body.ts";

const bytes = (n: number) => new Uint8Array(n).fill(7);

/** A POST whose body is `chunks`, then ends (or fails with `error`, or never ends with `hang`). */
function posting(chunks: Uint8Array[], end: "close" | "hang" | Error = "close") {
  const state = { cancelled: false };
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent < chunks.length) return controller.enqueue(chunks[sent++]);
      if (end === "close") return controller.close();
      if (end instanceof Error) return controller.error(end);
      return new Promise(() => {});
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { request: new Request("http://x/", { method: "POST", body }), state };
}

function bounds(over: Partial<BodyBounds> = {}): BodyBounds & { held: number[] } {
  const held: number[] = [];
  return {
    maxBytes: 100,
    deadline: performance.now() + 60_000,
    budget: new BodyBudget(1_000),
    taken: (n) => void held.push(n),
    held,
    ...over,
  };
}

async function refusal(promise: Promise<unknown>): Promise<[number, string, string | null]> {
  const error = await promise.then(() => undefined, (e) => e);
  expect(error).toBeInstanceOf(HttpError);
  const { status, message, headers } = error as HttpError;
  return [status, message, new Headers(headers).get("connection")];
}

Deno.test("a body in chunks is read whole, each chunk taken from the shared budget", async () => {
  const { request } = posting([bytes(30), bytes(20), bytes(50)]);
  const within = bounds();
  const body = await readBody(request, within);
  expect(body.length).toBe(100);
  expect(body.every((b) => b === 7)).toBe(true);
  expect(within.held.reduce((a, b) => a + b, 0)).toBe(100);
  expect(within.budget.held).toBe(100);
  expect((await readBody(new Request("http://x/"), bounds())).length).toBe(0);
});

Deno.test("a body past its size is refused 413 as it arrives, the rest never read", async () => {
  const { request, state } = posting([bytes(60), bytes(60), bytes(60)], "hang");
  const within = bounds();
  expect(await refusal(readBody(request, within)))
    .toEqual([413, "a body of at most 100 bytes", "close"]);
  expect(state.cancelled).toBe(true);
  expect(within.held).toEqual([60]);
});

Deno.test("a body that would pass what all bodies may hold at once is refused 503, nothing taken", async () => {
  const budget = new BodyBudget(100);
  expect(budget.take(70)).toBe(true);
  const { request } = posting([bytes(20), bytes(20)]);
  const within = bounds({ budget });
  const [status, message] = await refusal(readBody(request, within));
  expect([status, message]).toEqual([503, "too many bodies at once; try again"]);
  expect([budget.held, within.held]).toEqual([90, [20]]);
  budget.give(90);
  expect(budget.take(100)).toBe(true);
  expect(budget.take(1)).toBe(false);
});

Deno.test("a body not in by its deadline is refused 408; one that breaks, 400", async () => {
  const late = posting([bytes(10)], "hang");
  expect(await refusal(readBody(late.request, bounds({ deadline: performance.now() - 1 }))))
    .toEqual([408, "the body did not arrive in time", "close"]);
  expect(late.state.cancelled).toBe(true);
  const broken = posting([bytes(10)], new Error("bad chunk"));
  expect(await refusal(readBody(broken.request, bounds())))
    .toEqual([400, "the body could not be read (not valid HTTP, or cut off)", "close"]);
});

Deno.test("a body is declared by a length above zero or by chunked encoding", () => {
  const declared = (headers: Record<string, string>) =>
    declaresBody(new Request("http://x/", { headers }));
  expect(declared({})).toBe(false);
  expect(declared({ "content-length": "0" })).toBe(false);
  expect(declared({ "content-length": "5" })).toBe(true);
  expect(declared({ "transfer-encoding": "chunked" })).toBe(true);
});
