/**
 * A wall clock a test can jump in another process, while its monotonic clock runs true: Debian's
 * libfaketime, preloaded, re-reading an offset from a control file (`apt-get install faketime`).
 */

/** Where Debian and others put the library, by architecture. */
const CANDIDATES = [
  "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
  "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
  "/usr/lib/faketime/libfaketime.so.1",
  "/usr/local/lib/faketime/libfaketime.so.1",
];

/** The path of libfaketime, or undefined when it is not installed. */
export function findLibfaketime(): string | undefined {
  return CANDIDATES.find((path) => {
    try {
      return Deno.statSync(path).isFile;
    } catch {
      return false;
    }
  });
}

/**
 * One process's wall clock: pass `env` to the process, then `jump` it. The offset is read again
 * at most once a second, so a jump takes effect within a second; the monotonic clock is never
 * faked (FAKETIME_DONT_FAKE_MONOTONIC), which is the point: only the wall clock jumps.
 */
export class FakeWallClock {
  readonly #file: string;
  #offsetS = 0;

  private constructor(readonly library: string, file: string) {
    this.#file = file;
  }

  /** A clock controlled through `<dir>/<name>.faketime`, starting true. */
  static async create(library: string, dir: string, name: string): Promise<FakeWallClock> {
    const clock = new FakeWallClock(library, `${dir}/${name}.faketime`);
    await clock.#write();
    return clock;
  }

  /** The environment that puts a process on this clock. */
  get env(): Record<string, string> {
    return {
      LD_PRELOAD: this.library,
      FAKETIME_TIMESTAMP_FILE: this.#file,
      FAKETIME_CACHE_DURATION: "1",
      FAKETIME_DONT_FAKE_MONOTONIC: "1",
    };
  }

  /** Seconds the clock is off from the true time. */
  get offsetS(): number {
    return this.#offsetS;
  }

  /** Steps the wall clock by `seconds` (either way) from where it is. */
  async jump(seconds: number): Promise<void> {
    this.#offsetS += seconds;
    await this.#write();
  }

  async #write(): Promise<void> {
    const sign = this.#offsetS < 0 ? "-" : "+";
    await Deno.writeTextFile(this.#file, `${sign}${Math.abs(this.#offsetS)}\n`);
  }
}
