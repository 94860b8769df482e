import { expect } from "expect";
import type { Logger } from "../observe/mod.ts";
import { ChangeFanout } from "./change_fanout.ts";
import type { StoreChange } from "./store.ts";

type Obj = { metadata: { name: string } };
const change = (name: string) =>
  ({ type: "added", object: { metadata: { name } } }) as StoreChange<Obj>;

Deno.test("every subscriber hears each change in order, though one throws; unsubscribed ones do not", () => {
  const failures: unknown[] = [];
  const log = { error: (_: string, fields: unknown) => failures.push(fields) } as unknown as Logger;
  const fanout = new ChangeFanout<Obj>(log);
  const heard: string[] = [];
  fanout.add(() => {
    throw new Error("broken subscriber");
  });
  fanout.add((c) => heard.push(`a:${c.object.metadata.name}`));
  const stop = fanout.add((c) => heard.push(`b:${c.object.metadata.name}`));
  fanout.emit([change("x"), change("y")]);
  expect(heard).toEqual(["a:x", "b:x", "a:y", "b:y"]);
  expect(failures).toHaveLength(2);
  expect(String((failures[0] as { error: Error }).error)).toMatch(/broken subscriber/);
  stop();
  fanout.emit([change("z")]);
  expect(heard.slice(4)).toEqual(["a:z"]);
});
