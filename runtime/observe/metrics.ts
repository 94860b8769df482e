/** A small Prometheus registry: counters, gauges and histograms with labels, rendered as text 0.0.4. */
import { SeriesIndex } from "./series_index.ts";

/** Label values by label name. */
export type Labels = Record<string, string>;

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function renderLabels(
  names: readonly string[],
  values: string[],
  extra?: [string, string],
): string {
  const pairs = names.map((name, i) => `${name}="${escapeLabel(values[i])}"`);
  if (extra) pairs.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return pairs.length ? `{${pairs.join(",")}}` : "";
}

function formatNumber(value: number): string {
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return Number.isNaN(value) ? "NaN" : String(value);
}

/** Anything the registry renders: a name, and its lines of Prometheus text. */
export interface Metric {
  /** The metric's name, e.g. `workqueue_depth`. */
  readonly name: string;
  /** Its `# HELP`, `# TYPE` and sample lines. */
  render(): string;
}

/** A metric with labels: one value of `V` per set of label values. */
export abstract class Family<V> implements Metric {
  /** The value of each series, by its label values. */
  readonly #series: SeriesIndex<{ labels: string[]; value: V }>;
  /** A metric `name` with `help` text and the names of its labels. */
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly type: string,
  ) {
    this.#series = new SeriesIndex(labelNames);
  }

  /** The series of `labels`, made with `initial` the first time. */
  protected entry(labels: Labels, initial: () => V): { labels: string[]; value: V } {
    for (const key in labels) {
      if (!this.labelNames.includes(key)) {
        throw new TypeError(`metric ${this.name} has no label "${key}"`);
      }
    }
    let entry = this.#series.get(labels);
    if (!entry) {
      entry = { labels: this.labelNames.map((n) => labels[n] ?? ""), value: initial() };
      this.#series.set(labels, entry);
    }
    return entry;
  }

  /** The series of `labels`, if it was made. */
  protected find(labels: Labels): { labels: string[]; value: V } | undefined {
    return this.#series.get(labels);
  }

  /** Forgets one label combination (e.g. a deleted object's gauge). */
  remove(labels: Labels): void {
    this.#series.delete(labels);
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`];
    for (const { labels, value } of this.#series.values()) {
      lines.push(...this.sample(labels, value));
    }
    return lines.join("\n");
  }

  /** The sample lines of one series. */
  protected abstract sample(labels: string[], value: V): string[];
}

/** A value that only goes up. */
export class Counter extends Family<{ n: number }> {
  /** A metric `name` with `help` text and the names of its labels. */
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    super(name, help, labelNames, "counter");
  }
  /** Adds `by` to the series of `labels`. */
  inc(labels: Labels = {}, by = 1): void {
    if (by < 0) throw new RangeError(`counter ${this.name} cannot decrease`);
    this.entry(labels, () => ({ n: 0 })).value.n += by;
  }
  /** The value of the series of `labels` (0 when it has none). */
  get(labels: Labels = {}): number {
    return this.find(labels)?.value.n ?? 0;
  }
  /** One `name{labels} value` line. */
  protected sample(labels: string[], value: { n: number }): string[] {
    return [`${this.name}${renderLabels(this.labelNames, labels)} ${formatNumber(value.n)}`];
  }
}

/** A value that goes up and down. */
export class Gauge extends Family<{ n: number }> {
  /** A metric `name` with `help` text and the names of its labels. */
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    super(name, help, labelNames, "gauge");
  }
  /** Sets the series of `labels` to `value`. */
  set(labels: Labels, value: number): void {
    this.entry(labels, () => ({ n: 0 })).value.n = value;
  }
  /** Adds `by` to the series of `labels`. */
  inc(labels: Labels = {}, by = 1): void {
    this.entry(labels, () => ({ n: 0 })).value.n += by;
  }
  /** Subtracts `by` from the series of `labels`. */
  dec(labels: Labels = {}, by = 1): void {
    this.inc(labels, -by);
  }
  /** The value of the series of `labels` (0 when it has none). */
  get(labels: Labels = {}): number {
    return this.find(labels)?.value.n ?? 0;
  }
  /** One `name{labels} value` line. */
  protected sample(labels: string[], value: { n: number }): string[] {
    return [`${this.name}${renderLabels(this.labelNames, labels)} ${formatNumber(value.n)}`];
  }
}

/** One histogram series: counts per bucket, their sum and number. */
export interface HistogramValue {
  /** Observations per bucket (not cumulative; rendering adds them up). */
  counts: number[];
  /** The sum of every observation. */
  sum: number;
  /** How many observations. */
  count: number;
}

/** Observations counted into cumulative buckets. */
export class Histogram extends Family<HistogramValue> {
  /** The upper bounds of the buckets, ascending (`+Inf` is added). */
  readonly buckets: readonly number[];
  /** A metric `name` with `help` text and the names of its labels. */
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    buckets: readonly number[],
  ) {
    super(name, help, labelNames, "histogram");
    this.buckets = [...buckets].sort((a, b) => a - b);
  }
  /** Counts `value` into the series of `labels`. */
  observe(labels: Labels, value: number): void {
    const entry = this.entry(labels, () => ({
      counts: this.buckets.map(() => 0),
      sum: 0,
      count: 0,
    })).value;
    for (let i = 0; i < this.buckets.length; i++) {
      if (value <= this.buckets[i]) entry.counts[i]++;
    }
    entry.sum += value;
    entry.count++;
  }
  /** How many values the series of `labels` has observed. */
  count(labels: Labels = {}): number {
    return this.find(labels)?.value.count ?? 0;
  }
  /** The bucket, sum and count lines of one series. */
  protected sample(labels: string[], value: HistogramValue): string[] {
    const lines = this.buckets.map((bound, i) =>
      `${this.name}_bucket${renderLabels(this.labelNames, labels, ["le", formatNumber(bound)])} ${
        value.counts[i]
      }`
    );
    lines.push(
      `${this.name}_bucket${renderLabels(this.labelNames, labels, ["le", "+Inf"])} ${value.count}`,
      `${this.name}_sum${renderLabels(this.labelNames, labels)} ${formatNumber(value.sum)}`,
      `${this.name}_count${renderLabels(this.labelNames, labels)} ${value.count}`,
    );
    return lines;
  }
}

/** `start * factor^i` for `count` buckets, as client_golang's ExponentialBuckets. */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start * factor ** i);
}

/** Metrics by name, rendered together. Registering a name twice returns the first metric. */
export class Registry {
  readonly #metrics = new Map<string, Metric>();
  /** Sampled just before rendering (for values read from elsewhere, like request counts). */
  readonly #collectors: (() => void)[] = [];

  /** Adds `metric` (its name must be new) and returns it. */
  register<M extends Metric>(metric: M): M {
    const existing = this.#metrics.get(metric.name);
    if (existing) {
      if (existing.constructor !== metric.constructor) {
        throw new TypeError(`metric ${metric.name} is already registered as another type`);
      }
      return existing as M;
    }
    this.#metrics.set(metric.name, metric);
    return metric;
  }

  /** The counter `name`: made the first time, the same one after. */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.register(new Counter(name, help, labelNames));
  }
  /** The gauge `name`: made the first time, the same one after. */
  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.register(new Gauge(name, help, labelNames));
  }
  /** The histogram `name`: made the first time, the same one after. */
  histogram(
    name: string,
    help: string,
    labelNames: readonly string[],
    buckets: readonly number[],
  ): Histogram {
    return this.register(new Histogram(name, help, labelNames, buckets));
  }

  /** Runs `collect` before every render. */
  onCollect(collect: () => void): void {
    this.#collectors.push(collect);
  }

  /** The Prometheus text exposition format, version 0.0.4. */
  render(): string {
    for (const collect of this.#collectors) collect();
    return [...this.#metrics.values()].map((m) => m.render()).join("\n") + "\n";
  }
}

/** The content type of `render()`'s output. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
