/**
 * A real OpenTelemetry Collector for tests, on loopback: it receives OTLP (HTTP and gRPC) and
 * writes what arrives to files, which `spans()` and `logs()` read back as flat objects.
 */
import { type BinaryName, findBinaries } from "./binaries.ts";
import { freePorts } from "./ports.ts";
import { ManagedProcess } from "./process.ts";
import { forgetRun, ownStartTime, recordRun, sweepOrphans } from "./run_registry.ts";
import {
  type FlatLog,
  type FlatSpan,
  flattenLogs,
  flattenSpans,
  parseJsonLines,
} from "./otlp_json.ts";

/** How to start the collector. */
export interface OtelCollectorOptions {
  /** The `otelcol` binary to run; by default found, or built once, by `findBinaries`. */
  binaries?: Pick<Record<BinaryName, string>, "otelcol">;
  /** Give up waiting for it to be ready after this long; default 30 s. */
  startTimeoutMs?: number;
  /** Receives progress lines (a first build of the binary); stderr by default. */
  progress?: (line: string) => void;
}

/** The signals the collector keeps, one file each. */
export type Signal = "traces" | "logs" | "metrics";
const SIGNALS: readonly Signal[] = ["traces", "logs", "metrics"];

/** What the collector logs once its receivers listen and its exporters are up. */
const READY_LINE = "Everything is ready";

/** A running collector. `stop()` is idempotent. */
export class OtelCollector {
  /** OTLP over HTTP: what `OTEL_EXPORTER_OTLP_ENDPOINT` takes (`http/protobuf` or `http/json`). */
  readonly endpoint: string;
  /** OTLP over gRPC, for `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`. */
  readonly grpcEndpoint: string;
  /** The folder with the config, the collector's log and the received data. */
  readonly dir: string;
  /** The collector's own log (JSON lines). */
  readonly logFile: string;
  /** The collector's PID, which is also its process group's. */
  readonly pid: number;
  readonly #process: ManagedProcess;
  readonly #unload: () => void;
  #stopping?: Promise<void>;

  private constructor(dir: string, process: ManagedProcess, ports: [number, number]) {
    this.dir = dir;
    this.#process = process;
    this.logFile = process.logFile;
    this.pid = process.pid;
    this.endpoint = `http://127.0.0.1:${ports[0]}`;
    this.grpcEndpoint = `http://127.0.0.1:${ports[1]}`;
    // A test process that exits without stop() must not leave the collector running.
    this.#unload = () => {
      try {
        Deno.kill(-process.pid, "SIGKILL");
      } catch {
        // gone already
      }
    };
    globalThis.addEventListener("unload", this.#unload);
  }

  /** Starts a collector on free loopback ports and waits until it accepts data. */
  static async start(options: OtelCollectorOptions = {}): Promise<OtelCollector> {
    const progress = options.progress ?? ((line: string) => console.error(line));
    await sweepOrphans();
    const { otelcol } = options.binaries ?? await findBinaries({ names: ["otelcol"], progress });
    const dir = await Deno.makeTempDir({ prefix: "ptemplate-otelcol-" });
    const [httpPort, grpcPort] = freePorts(2);
    await Deno.writeTextFile(`${dir}/config.yaml`, collectorConfig(dir, httpPort, grpcPort));
    const process = ManagedProcess.start({
      name: "otelcol",
      command: otelcol,
      args: [`--config=${dir}/config.yaml`],
      logFile: `${dir}/otelcol.log`,
    });
    recordRun(dir, await ownStartTime(), [process.pid], [otelcol]);
    const collector = new OtelCollector(dir, process, [httpPort, grpcPort]);
    try {
      await collector.#waitUntilReady(options.startTimeoutMs ?? 30_000);
    } catch (error) {
      await collector.stop({ keepFiles: true });
      throw error;
    }
    return collector;
  }

  /**
   * The environment for a Deno program to send its spans, logs and metrics here: `OTEL_DENO`, the
   * endpoint, `http/protobuf`, and export delays of 100 ms. Deno's defaults hold spans about
   * 10 s and logs about 2 s in a long-running process (a process that exits sends them at exit).
   */
  denoEnv(): Record<string, string> {
    return {
      OTEL_DENO: "true",
      OTEL_EXPORTER_OTLP_ENDPOINT: this.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_BSP_SCHEDULE_DELAY: "100",
      OTEL_BLRP_SCHEDULE_DELAY: "100",
      OTEL_METRIC_EXPORT_INTERVAL: "1000",
    };
  }

  /** Every span received so far, in the order received. */
  async spans(): Promise<FlatSpan[]> {
    return flattenSpans(await this.documents("traces"));
  }

  /** Every log record received so far (Deno sends `console.*` output as these). */
  async logs(): Promise<FlatLog[]> {
    return flattenLogs(await this.documents("logs"));
  }

  /**
   * The OTLP JSON documents received so far for a signal, one per export request, as the
   * collector wrote them (`TracesData`, `LogsData`, `MetricsData`).
   */
  async documents(signal: Signal): Promise<unknown[]> {
    const path = `${this.dir}/${signal}.jsonl`;
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound && !this.#stopping) return [];
      throw error;
    }
    return parseJsonLines(text, path);
  }

  /**
   * Stops the collector (SIGTERM, which flushes the files; SIGKILL after 5 s). Removes its folder
   * unless `keepFiles`; a kept folder is printed. Read what you need before stopping.
   */
  stop(options: { keepFiles?: boolean } = {}): Promise<void> {
    this.#stopping ??= this.#stop(options);
    return this.#stopping;
  }

  async #stop(options: { keepFiles?: boolean }): Promise<void> {
    await this.#process.stop();
    globalThis.removeEventListener("unload", this.#unload);
    await forgetRun(this.dir);
    if (options.keepFiles) {
      console.error(`otel collector files kept in ${this.dir}`);
    } else {
      await Deno.remove(this.dir, { recursive: true }).catch(() => {});
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  async #waitUntilReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const log = await Deno.readTextFile(this.logFile).catch(() => "");
      if (log.includes(READY_LINE)) return;
      const status = this.#process.status;
      if (status || Date.now() >= deadline) {
        throw new Error(
          `otel collector ${
            status ? `exited with code ${status.code}` : `not ready after ${timeoutMs} ms`
          }; its log (${this.logFile}) ends:\n${log.split("\n").slice(-15).join("\n")}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/**
 * The collector's config (JSON, which YAML reads): OTLP in on both ports, and per signal a file
 * exporter writing OTLP JSON lines, flushed every 100 ms so data shows within a poll or two.
 * Nothing else listens: the build's own telemetry is a log on stderr only.
 */
function collectorConfig(dir: string, httpPort: number, grpcPort: number): string {
  const exporters = Object.fromEntries(
    SIGNALS.map((s) => [`file/${s}`, { path: `${dir}/${s}.jsonl`, flush_interval: "100ms" }]),
  );
  const pipelines = Object.fromEntries(
    SIGNALS.map((s) => [s, { receivers: ["otlp"], exporters: [`file/${s}`] }]),
  );
  return JSON.stringify(
    {
      receivers: {
        otlp: {
          protocols: {
            http: { endpoint: `127.0.0.1:${httpPort}` },
            grpc: { endpoint: `127.0.0.1:${grpcPort}` },
          },
        },
      },
      exporters,
      service: { telemetry: { logs: { level: "info" } }, pipelines },
    },
    null,
    2,
  );
}
