/**
 * Owned chunks of a real child's pipe, as Deno reads it (64 KiB buffers for a few bytes). Named
 * `_process_test` because it runs `deno`: `deno task test:unit` runs no program.
 */
import { expect } from "expect";
import { ownedChunks } from "./owned_chunks.ts";

Deno.test("a child process's output comes in chunks that own their bytes, in order", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      "for (let i = 0; i < 5; i++) { console.log(`line ${i}`); await new Promise((r) => setTimeout(r, 20)); }",
    ],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const chunks: Uint8Array[] = [];
  for await (const chunk of ownedChunks(child.stdout)) chunks.push(chunk);
  await child.status;
  // Deno's own reader gives each of these few bytes a 64 KiB buffer.
  for (const chunk of chunks) expect(chunk.buffer.byteLength).toBe(chunk.byteLength);
  const text = chunks.map((chunk) => new TextDecoder().decode(chunk)).join("");
  expect(text).toBe("line 0\nline 1\nline 2\nline 3\nline 4\n");
});
