/**
 * A CPU limit for one process, as a pod's `limits.cpu` sets one: a cgroup of the kernel's CPU
 * controller with a CFS quota, which a command enters before it becomes the process (`launcher`).
 * For the benchmarks: on one machine, replicas that share its cores are otherwise bounded by the
 * control plane beside them, not by what each may use. The cgroup's files are read and written by
 * `sh`: Deno asks for every permission before it touches `/sys` itself.
 */

/** Where the CPU controller is mounted: cgroup v2's unified tree, or v1's `cpu` hierarchy. */
const V2 = "/sys/fs/cgroup";
const V1 = "/sys/fs/cgroup/cpu";
const PERIOD_US = 100_000;

export class CpuLimit {
  private constructor(readonly dir: string, readonly v2: boolean) {}

  /** A new cgroup named `name` that may use `cores` CPUs (0.25: a quarter of one). */
  static async create(name: string, cores: number): Promise<CpuLimit> {
    if (!(cores > 0)) throw new Error(`a CPU limit must be above 0 cores, not ${cores}`);
    const v2 = (await sh(`cat ${V2}/cgroup.controllers 2>/dev/null || true`))
      .split(/\s+/).includes("cpu");
    const dir = `${v2 ? V2 : V1}/${name}`;
    const quota = Math.round(cores * PERIOD_US);
    try {
      await sh(
        `mkdir -p '${dir}' && ` +
          (v2
            ? `echo '${quota} ${PERIOD_US}' > '${dir}/cpu.max'`
            : `echo ${PERIOD_US} > '${dir}/cpu.cfs_period_us' && ` +
              `echo ${quota} > '${dir}/cpu.cfs_quota_us'`),
      );
    } catch (error) {
      // A cgroup made but refused its quota would be left empty behind us.
      await sh(`rmdir '${dir}' 2>/dev/null || true`);
      throw new Error(
        `--cpu-limit needs a cgroup CPU controller this user may write (${dir}): ` +
          `${
            (error as Error).message
          }; run as root where cgroups are writable, or drop --cpu-limit`,
      );
    }
    return new CpuLimit(dir, v2);
  }

  /** The cgroups whose names begin with `prefix` that exist now, under either mount. */
  static async named(prefix: string): Promise<string[]> {
    const dirs = await sh(`ls -d ${V2}/${prefix}* ${V1}/${prefix}* 2>/dev/null || true`);
    return dirs.split("\n").filter(Boolean);
  }

  /** A command that enters the cgroup and then runs its arguments in its own place (`exec`). */
  get launcher(): string[] {
    return ["sh", "-c", `echo $$ > '${this.dir}/cgroup.procs' && exec "$@"`, "sh"];
  }

  /** How often the quota held the cgroup back: periods throttled of those that ran. */
  async throttled(): Promise<{ periods: number; throttledPeriods: number }> {
    const stat = Object.fromEntries(
      (await sh(`cat '${this.dir}/cpu.stat'`)).trim().split("\n").map((line) => {
        const [key, value] = line.split(" ");
        return [key, Number(value)];
      }),
    );
    return { periods: stat.nr_periods, throttledPeriods: stat.nr_throttled };
  }

  /** Removes the cgroup, once the processes in it have exited. */
  async remove(): Promise<void> {
    await sh(`rmdir '${this.dir}'`).catch(() => {});
  }
}

/** Runs `script` in `sh`: its output, or an error with what it wrote to stderr. */
async function sh(script: string): Promise<string> {
  const { success, stdout, stderr } = await new Deno.Command("sh", { args: ["-c", script] })
    .output();
  const text = new TextDecoder();
  if (!success) throw new Error(text.decode(stderr).trim() || `sh -c ${script} failed`);
  return text.decode(stdout);
}
