/**
 * `npm run bench`: every benchmark module in one run, one table.
 *
 *   npm run bench                     # quick: about a minute or two, gregor and the reference Kafka broker
 *   npm run bench -- --full           # everything; also writes bench/RESULTS.md
 *   npm run bench -- --no-kafka       # without the reference broker (when it is not installed)
 *   npm run bench -- --no-kfake       # without franz-go's kfake
 *   npm run bench -- --only throughput,latency
 *
 * Modules run one after another, each starting and stopping the brokers it
 * measures, so that no two loads share the machine. A module that fails is
 * reported in the output and the run goes on; the exit code is then 1. Goals
 * are reported by the modules' rows and the table's ratios, never enforced.
 */
import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './brokers.js';
import { formatTable, type BenchModule, type BenchRow } from './report.js';

const MODULES = ['startup', 'throughput', 'latency', 'scale', 'cross-check', 'cluster'] as const;

interface Args {
  full: boolean;
  kafka: boolean;
  kfake: boolean;
  only: string[] | null;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { full: false, kafka: true, kfake: true, only: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--full') args.full = true;
    else if (a === '--quick') args.full = false;
    else if (a === '--no-kafka') args.kafka = false;
    else if (a === '--no-kfake') args.kfake = false;
    else if (a === '--only') args.only = (argv[++i] ?? '').split(',').filter(Boolean);
    else throw new Error(`unknown argument "${a}"; usage: node dist/bench/index.js [--quick|--full] [--no-kafka] [--no-kfake] [--only ${MODULES.join(',')}]`);
  }
  for (const m of args.only ?? []) if (!(MODULES as readonly string[]).includes(m)) throw new Error(`no benchmark module "${m}"; there are ${MODULES.join(', ')}`);
  return args;
}

function machine(): string {
  const cpu = cpus();
  return `${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown'}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB memory, Node ${process.version}, ${process.platform} ${process.arch}`;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const started = new Date();
  const mode = args.full ? 'full' : 'quick';
  console.log(`gregor benchmarks (${mode}), ${started.toISOString()}; ${machine()}`);
  const rows: BenchRow[] = [];
  const failures: string[] = [];
  const timings: string[] = [];
  for (const name of MODULES) {
    if (args.only && !args.only.includes(name)) continue;
    const t0 = performance.now();
    console.log(`\n== ${name}`);
    try {
      const mod = (await import(`./${name}.js`)) as { run: BenchModule };
      rows.push(...(await mod.run({ quick: !args.full, kafka: args.kafka, kfake: args.kfake, log: (line) => console.log(`  ${line}`) })));
    } catch (err) {
      const msg = err instanceof Error ? (err.stack ?? err.message) : String(err);
      failures.push(`${name}: ${msg}`);
      console.log(`  FAILED: ${msg}`);
    }
    timings.push(`${name} ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const table = formatTable(rows);
  console.log(`\n${table}\n\ntime per module: ${timings.join(', ')}`);
  if (failures.length > 0) {
    console.log(`\n${failures.length} module(s) failed:\n${failures.join('\n')}`);
    process.exitCode = 1;
  }
  if (args.full && failures.length === 0 && !args.only) {
    const path = join(repoRoot(), 'bench', 'RESULTS.md');
    writeFileSync(
      path,
      [
        '# Benchmark results',
        '',
        `Last full run: ${started.toISOString()}, \`npm run bench -- --full\` (${timings.join(', ')}).`,
        '',
        `Machine: ${machine()}. Every figure below was measured in that one run; "gregor vs subject" is`,
        "gregor's figure over the subject's for rates, and the subject's over gregor's for times and",
        'memory, so above 1 means gregor did better.',
        '',
        '```',
        table,
        '```',
        '',
      ].join('\n'),
    );
    console.log(`\nwrote ${path}`);
  }
}

main().catch((err: unknown) => {
  console.error(`bench: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
