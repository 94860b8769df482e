/** A small Prometheus registry: counters, gauges and histograms with labels, rendered as text 0.0.4. */

type Labels = Record<string, string>;

function labelKey(names: readonly string[], labels: Labels): string {
  return JSON.stringify(names.map((name) => labels[name] ?? ""));
}

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

interface Metric {
  readonly name: string;
  render(): string;
}

abstract class Family<V> implements Metric {
  protected readonly values = new Map<string, { labels: string[]; value: V }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly type: string,
  ) {}

  protected entry(labels: Labels, initial: () => V): { labels: string[]; value: V } {
    for (const key of Object.keys(labels)) {
      if (!this.labelNames.includes(key)) {
        throw new TypeError(`metric ${this.name} has no label "${key}"`);
      }
    }
    const key = labelKey(this.labelNames, labels);
    let entry = this.values.get(key);
    if (!entry) {
      entry = { labels: this.labelNames.map((n) => labels[n] ?? ""), value: initial() };
      this.values.set(key, entry);
    }
    return entry;
  }

  /** Forgets one label combination (e.g. a deleted object's gauge). */
  remove(labels: Labels): void {
    this.values.delete(labelKey(this.labelNames, labels));
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`];
    for (const { labels, value } of this.values.values()) lines.push(...this.sample(labels, value));
    return lines.join("\n");
  }

  protected abstract sample(labels: string[], value: V): string[];
}

/** A value that only goes up. */
export class Counter extends Family<{ n: number }> {
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    super(name, help, labelNames, "counter");
  }
  inc(labels: Labels = {}, by = 1): void {
    if (by < 0) throw new RangeError(`counter ${this.name} cannot decrease`);
    this.entry(labels, () => ({ n: 0 })).value.n += by;
  }
  get(labels: Labels = {}): number {
    return this.values.get(labelKey(this.labelNames, labels))?.value.n ?? 0;
  }
  protected sample(labels: string[], value: { n: number }): string[] {
    return [`${this.name}${renderLabels(this.labelNames, labels)} ${formatNumber(value.n)}`];
  }
}

/** A value that goes up and down. */
export class Gauge extends Family<{ n: number }> {
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    super(name, help, labelNames, "gauge");
  }
  set(labels: Labels, value: number): void {
    this.entry(labels, () => ({ n: 0 })).value.n = value;
  }
  inc(labels: Labels = {}, by = 1): void {
    this.entry(labels, () => ({ n: 0 })).value.n += by;
  }
  dec(labels: Labels = {}, by = 1): void {
    this.inc(labels, -by);
  }
  get(labels: Labels = {}): number {
    return this.values.get(labelKey(this.labelNames, labels))?.value.n ?? 0;
  }
  protected sample(labels: string[], value: { n: number }): string[] {
    return [`${this.name}${renderLabels(this.labelNames, labels)} ${formatNumber(value.n)}`];
  }
}

interface HistogramValue {
  counts: number[];
  sum: number;
  count: number;
}

/** Observations counted into cumulative buckets. */
export class Histogram extends Family<HistogramValue> {
  readonly buckets: readonly number[];
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    buckets: readonly number[],
  ) {
    super(name, help, labelNames, "histogram");
    this.buckets = [...buckets].sort((a, b) => a - b);
  }
  observe(labels: Labels, value: number): void {
    const entry = this.entry(labels, () => ({
      counts: this.buckets.map(() => 0),
      sum: 0,
      count: 0,
    })).value;
    this.buckets.forEach((bound, i) => {
      if (value <= bound) entry.counts[i]++;
    });
    entry.sum += value;
    entry.count++;
  }
  count(labels: Labels = {}): number {
    return this.values.get(labelKey(this.labelNames, labels))?.value.count ?? 0;
  }
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

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.register(new Counter(name, help, labelNames));
  }
  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.register(new Gauge(name, help, labelNames));
  }
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
