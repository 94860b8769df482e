/**
 * The profiles a bench:scale run took, as the Markdown tables it prints after its figures: the main
 * thread's CPU profile (`--cpu-prof`, whole and by stretch), the allocations (`--alloc-prof`) and
 * perf's split of the process (`--perf`).
 */
import type { AllocSummary } from "./alloc_profile.ts";
import type { ProfileSummary } from "./cpu_profile.ts";
import type { PerfSplit } from "./perf_split.ts";

/** A stretch of the run, in seconds after the operator's start, and its profiles. */
export interface Stretch {
  stretch: string;
  fromSeconds?: number;
  toSeconds?: number;
  profiles?: ({ file: string } & ProfileSummary)[];
}

/** The lines of every profile table `result` holds (none when it holds no profile). */
export function profileTables(result: Record<string, unknown>, count: number): string[] {
  const lines: string[] = [];
  const say = (line: string) => lines.push(line);
  const profiles = [
    ...(result.cpuProfile ?? []) as ({ file: string } & ProfileSummary)[],
    ...((result.cpuProfileStretches ?? []) as Stretch[]).flatMap((stretch) =>
      stretch.profiles!.map((p) => ({ ...p, file: `${p.file}, ${stretch.stretch}` }))
    ),
  ];
  for (const profile of profiles) {
    say(
      `\n${profile.file}: ${profile.seconds} s, idle ${profile.idleSeconds} s, ` +
        `garbage collection ${profile.gcSeconds} s, running ${profile.busySeconds} s`,
    );
    say(
      "\n| own time, s | function | | inside it, s | function |\n| --- | --- | --- | --- | --- |",
    );
    profile.selfByFunction.forEach((own, i) => {
      const inside = profile.insideFunction[i];
      say(`| ${own.seconds} | ${own.name} | | ${inside?.seconds ?? ""} | ${inside?.name ?? ""} |`);
    });
  }
  for (const [i, alloc] of ((result.allocProfile ?? []) as AllocSummary[]).entries()) {
    const perPtemplate = (alloc.mib * 1024 / count).toFixed(1);
    say(`\nreplica ${i} allocated ${alloc.mib} MiB (${perPtemplate} KiB per Ptemplate)\n`);
    say("| MiB | file | | MiB | function |\n| --- | --- | --- | --- | --- |");
    alloc.byFile.forEach((file, j) => {
      const fn = alloc.byFunction[j];
      say(`| ${file.mib} | ${file.name} | | ${fn?.mib ?? ""} | ${fn?.name ?? ""} |`);
    });
  }
  for (const split of (result.perfStretches ?? []) as ({ stretch: string } & PerfSplit)[]) {
    const percent = (share: number) => `${(share * 100).toFixed(1)}%`;
    say(`\nperf, ${split.stretch}: ${split.samples} samples\n`);
    say("| where the process's CPU went | share |\n| --- | --- |");
    for (const part of split.parts) say(`| ${part.name} | ${percent(part.share)} |`);
    say("\n| native code called by | share |\n| --- | --- |");
    for (const caller of split.nativeCallers) say(`| ${caller.name} | ${percent(caller.share)} |`);
  }
  return lines;
}
