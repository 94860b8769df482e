/**
 * A program that waits, after importing the module its argument names, if any: the floor of
 * `deno run` with the start task's flags, and what loading a module graph adds to it.
 */
if (Deno.args[0]) await import(Deno.args[0]);
console.log("ready");
setInterval(() => {}, 60_000);
