/**
 * What every benchmark module reports, and the one table `npm run bench`
 * prints. A module measures one or more scenarios; for each it gives one
 * figure per subject measured in the same run (gregor, the reference Kafka
 * broker, and baselines such as the null sink or a plain file write). The
 * table puts the subjects of a scenario side by side and gives gregor's
 * figure as a ratio to each of the others.
 *
 * Example: rows [{ scenario: 'produce acks=1 100 B x 1 partition', subject:
 * 'gregor', value: 410000, unit: 'records/s', better: 'higher' }, { ...,
 * subject: 'kafka 4.4.0', value: 520000 }] print as one line with
 * "gregor/kafka 4.4.0 0.79".
 */
import { pathToFileURL } from 'node:url';

export interface BenchRow {
  /** Which module measured it, e.g. 'throughput'. */
  readonly module: string;
  readonly scenario: string;
  /** 'gregor', 'kafka <version>', or a baseline's name. */
  readonly subject: string;
  readonly value: number;
  readonly unit: string;
  /** Whether a larger value is better (rates) or a smaller one (latencies, memory). */
  readonly better: 'higher' | 'lower';
  /** Anything a reader needs to judge the figure (errors seen, samples taken). */
  readonly note?: string;
}

/** Options every module's `run` takes. */
export interface BenchOptions {
  /** The short version (`npm run bench`, about a minute in all) rather than `--full`. */
  readonly quick: boolean;
  /** Also measure the reference Kafka broker (needs `compat-tests/reference-kafka/run install`). */
  readonly kafka: boolean;
  /** Also measure franz-go's kfake (built by `bench/kfake/run install`); on unless false. */
  readonly kfake?: boolean;
  readonly log: (line: string) => void;
}

/** A benchmark module: measures its scenarios and returns their rows. */
export type BenchModule = (opts: BenchOptions) => Promise<BenchRow[]>;

function formatValue(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  return v.toPrecision(3);
}

/**
 * The rows as a text table: one line per scenario and subject, with gregor's
 * ratio to that subject (gregor / subject for 'higher', subject / gregor for
 * 'lower', so that above 1 always means gregor does better).
 */
export function formatTable(rows: readonly BenchRow[]): string {
  const lines: string[][] = [['module', 'scenario', 'subject', 'value', 'unit', 'gregor vs subject', 'note']];
  const scenarios = [...new Set(rows.map((r) => `${r.module}\u0000${r.scenario}`))];
  for (const key of scenarios) {
    const [module, scenario] = key.split('\u0000') as [string, string];
    const group = rows.filter((r) => r.module === module && r.scenario === scenario);
    const gregor = group.find((r) => r.subject === 'gregor');
    for (const r of group) {
      let ratio = '';
      if (gregor && r !== gregor && r.value > 0 && gregor.value > 0) {
        ratio = (r.better === 'higher' ? gregor.value / r.value : r.value / gregor.value).toFixed(2);
      }
      lines.push([module, scenario, r.subject, formatValue(r.value), r.unit, ratio, r.note ?? '']);
    }
  }
  const widths = lines[0]!.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  return lines.map((l) => l.map((c, i) => (i === 3 || i === 5 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

/**
 * Runs one module as a script, `node dist/bench/<name>.js [--quick | --full]
 * [--no-kafka]` (quick by default): prints its table and how long it took;
 * the exit code is 1 when it fails. Does nothing unless the calling module
 * (`moduleUrl`, its import.meta.url) is the script node was started with.
 */
export function runStandalone(name: string, moduleUrl: string, run: BenchModule): void {
  if (process.argv[1] === undefined || moduleUrl !== pathToFileURL(process.argv[1]).href) return;
  const usage = `usage: node dist/bench/${name}.js [--quick | --full] [--no-kafka] [--no-kfake]`;
  let quick = true;
  let kafka = true;
  let kfake = true;
  for (const arg of process.argv.slice(2)) {
    if (arg === '--quick') quick = true;
    else if (arg === '--full') quick = false;
    else if (arg === '--no-kafka') kafka = false;
    else if (arg === '--no-kfake') kfake = false;
    else {
      console.error(arg === '--help' || arg === '-h' ? usage : `unknown argument "${arg}"; ${usage}`);
      process.exitCode = arg === '--help' || arg === '-h' ? 0 : 1;
      return;
    }
  }
  const t0 = performance.now();
  run({ quick, kafka, kfake, log: (line) => console.error(line) }).then(
    (rows) => {
      console.log(formatTable(rows));
      console.log(`\n${name}: ${quick ? 'quick' : 'full'} run took ${((performance.now() - t0) / 1000).toFixed(1)} s; node ${process.version}`);
    },
    (err: unknown) => {
      console.error(`bench/${name}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      process.exitCode = 1;
    },
  );
}
