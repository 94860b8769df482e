import { expect } from "expect";
import { profileTables } from "./profile_tables.ts";

Deno.test("no profile, no table; an allocation profile per replica, per Ptemplate too", () => {
  expect(profileTables({ cpuSeconds: 7 }, 1000)).toEqual([]);
  const lines = profileTables({
    allocProfile: [{
      mib: 470,
      byFile: [{ name: "kube/watch.ts", mib: 23 }, { name: "kube/client.ts", mib: 10.4 }],
      byFunction: [{ name: "watchEvents kube/watch.ts", mib: 18.4 }],
    }],
  }, 1000);
  expect(lines).toEqual([
    "\nreplica 0 allocated 470 MiB (481.3 KiB per Ptemplate)\n",
    "| MiB | file | | MiB | function |\n| --- | --- | --- | --- | --- |",
    "| 23 | kube/watch.ts | | 18.4 | watchEvents kube/watch.ts |",
    "| 10.4 | kube/client.ts | |  |  |",
  ]);
});
