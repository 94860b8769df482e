import { expect } from "expect";
import { ReadAnswer } from "./answer.ts";

Deno.test("ReadAnswer: the status, the headers it came with, the text as often as asked", async () => {
  const headers = new Headers({ "content-type": "application/json", "retry-after": "3" });
  const answer = new ReadAnswer(200, "OK", headers, '{"kind":"Status"}');
  expect(answer.ok).toBe(true);
  expect(answer.headers).toBe(headers);
  expect(await answer.text()).toBe('{"kind":"Status"}');
  expect(await answer.text()).toBe('{"kind":"Status"}');
  expect(await answer.json()).toEqual({ kind: "Status" });
});

Deno.test("ReadAnswer: ok only for 2xx, as a Response's", () => {
  const ok = (status: number) => new ReadAnswer(status, "", new Headers(), "").ok;
  expect([199, 200, 201, 299, 300, 404, 409, 500].map(ok)).toEqual(
    [false, true, true, true, false, false, false, false],
  );
});

Deno.test("ReadAnswer: a body that is not JSON rejects json(), as a Response's does", async () => {
  const answer = new ReadAnswer(200, "OK", new Headers(), "ok");
  await expect(answer.json()).rejects.toThrow(SyntaxError);
});
