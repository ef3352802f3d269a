/**
 * A Prometheus histogram for the one metric observed on every call. prom-client's Histogram
 * validates the labels, builds and hashes a label string, and finds the bucket through a
 * number-keyed property on every observation, a measurable share of a REST resolve
 * (docs/performance.md#rest-and-the-shared-pipeline). Here a series is made once per label set
 * and an observation indexes an array. It
 * renders itself in the text exposition format (version 0.0.4), after prom-client's own metrics.
 */

export interface LeanHistogramOptions<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  /** Upper bounds, ascending; +Inf is added. */
  readonly buckets: readonly number[];
}

/** One label set's observations. */
export interface HistogramSeries {
  observe(value: number): void;
}

export interface LeanHistogram<L extends string> {
  /** The series of one label set, made on first use; keep it rather than asking each time. */
  labels(values: Readonly<Record<L, string>>): HistogramSeries;
  /** HELP, TYPE and every series' buckets, sum and count; "" before any observation. */
  render(): string;
}

class Series implements HistogramSeries {
  /** Observations per bucket, not cumulative; the last is +Inf's own. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly bounds: readonly number[],
    /** The label pairs as rendered: `name="value"`, joined with commas. */
    readonly labelText: string,
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const { bounds } = this;
    let index = 0;
    while (index < bounds.length && value > (bounds[index] as number)) index++;
    (this.counts[index] as number)++;
    this.sum += value;
    this.count++;
  }
}

export function createLeanHistogram<L extends string>(options: LeanHistogramOptions<L>): LeanHistogram<L> {
  const { name, labelNames } = options;
  const bounds = [...options.buckets];
  for (let i = 1; i < bounds.length; i++) {
    if (!((bounds[i] as number) > (bounds[i - 1] as number))) throw new RangeError(`${name}: buckets must be ascending`);
  }
  const series = new Map<string, Series>();
  const header = `# HELP ${name} ${escapeHelp(options.help)}\n# TYPE ${name} histogram\n`;
  return {
    labels(values) {
      const labelText = labelNames.map((label) => `${label}="${escapeLabelValue(values[label])}"`).join(",");
      let found = series.get(labelText);
      if (found === undefined) series.set(labelText, (found = new Series(bounds, labelText)));
      return found;
    },
    render() {
      if (series.size === 0) return "";
      let text = header;
      for (const { counts, sum, count, labelText } of series.values()) {
        let cumulative = 0;
        for (let i = 0; i < bounds.length; i++) {
          cumulative += counts[i] as number;
          text += `${name}_bucket{le="${bounds[i]}",${labelText}} ${cumulative}\n`;
        }
        text += `${name}_bucket{le="+Inf",${labelText}} ${count}\n`;
        text += `${name}_sum{${labelText}} ${sum}\n`;
        text += `${name}_count{${labelText}} ${count}\n`;
      }
      return text;
    },
  };
}

/** Label values escape backslash, double quote and newline (the exposition format's rule). */
function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** HELP text escapes backslash and newline. */
function escapeHelp(help: string): string {
  return help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}
