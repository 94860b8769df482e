import { expect } from "expect";

Deno.test("plugins/README.md shows the tested example files exactly", async () => {
  const readme = await Deno.readTextFile(new URL("./README.md", import.meta.url));
  const blocks = [...readme.matchAll(/<!-- file: (\S+) -->\n+```ts\n([\s\S]*?)```/g)];
  expect(blocks.map(([, file]) => file)).toEqual([
    "plugins/greeting/greeting.ts",
    "plugins/greeting/greeting_unit_test.ts",
    "plugins/greeting/greeting_test.ts",
  ]);
  for (const [, file, code] of blocks) {
    const actual = await Deno.readTextFile(new URL(`../${file}`, import.meta.url));
    expect({ file, same: code === actual }).toEqual({ file, same: true });
  }
});
