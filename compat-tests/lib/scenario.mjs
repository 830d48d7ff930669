/** How long `settle` retries: Apache Kafka applies admin changes through its metadata log, so reads lag a little. */
export const SETTLE_MS = 5_000;

/** Runs check() until it stops throwing a ScenarioFailure or SETTLE_MS passes; other errors end it at once. */
export async function settle(check) {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (!(err instanceof ScenarioFailure) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

// The scenario runner shared by the Node clients' client.mjs: argument parsing, exit
// statuses, the overall time bound, pass/FAIL lines, and the metadata scenario's checks.

// Upper bound for one scenario, so a broker that never answers fails instead of hanging.
export const SCENARIO_TIMEOUT_MS = 20_000;
// Scenarios that wait on the broker's timers (rebalances, session timeouts, acquisition locks) get longer,
// still under the matrix's hard 60 s.
export const SCENARIO_TIMEOUTS_MS = { group: 45_000, txn: 40_000, 'idempotent-cut': 40_000, 'share-group-rules': 45_000 };

export const EXIT_PASS = 0;
export const EXIT_FAIL = 1;
export const EXIT_NOT_IMPLEMENTED = 3;

// A check that did not hold: printed as its message alone, without the error's name.
export class ScenarioFailure extends Error {}

export function expect(condition, message) {
  if (!condition) throw new ScenarioFailure(message);
}

// Prints what the client reported about the cluster, then applies the metadata scenario's
// rules to it, throwing a ScenarioFailure at the first one broken. `brokers` are
// { nodeId, host, port }; `source` names the call they came from.
export function checkCluster({ source, brokers, controller, clusterId }) {
  console.log(`clusterId: ${JSON.stringify(clusterId)}`);
  console.log(`controller: ${controller}`);
  const list = Array.isArray(brokers) ? brokers : [];
  for (const b of list) console.log(`broker ${b.nodeId}: ${b.host}:${b.port}`);
  expect(list.length > 0, `${source} returned no brokers`);
  for (const b of list) {
    expect(typeof b.host === 'string' && b.host.length > 0, `broker ${b.nodeId} has an empty host`);
    expect(Number.isInteger(b.port) && b.port > 0, `broker ${b.nodeId} has port ${b.port}`);
  }
  const ids = list.map((b) => b.nodeId);
  expect(ids.includes(controller), `controller ${controller} is not among brokers [${ids.join(', ')}]`);
  expect(typeof clusterId === 'string' && clusterId.length > 0, 'clusterId is empty');
}

// The FAIL line's text for an error that is not a ScenarioFailure, and the lines after it.
function defaultFormatError(err) {
  const summary = `${err?.name ?? 'Error'}: ${err?.message ?? err}`;
  const cause = err?.cause?.message ?? err?.cause;
  const details = [];
  if (cause && cause !== err.message && !String(err.message).includes(cause)) details.push(`  cause: ${cause}`);
  return { summary, details };
}

async function runOne({ label, banner, scenarios, timeoutMs: defaultTimeoutMs, formatError, argv }) {
  const [name, bootstrap] = argv;
  if (!name || !bootstrap) {
    console.error('usage: client.mjs <scenario> <host:port>');
    return EXIT_FAIL;
  }
  const scenario = Object.hasOwn(scenarios, name) ? scenarios[name] : undefined;
  if (!scenario) {
    console.log(`${label}: scenario ${name} not implemented`);
    return EXIT_NOT_IMPLEMENTED;
  }
  const timeoutMs = SCENARIO_TIMEOUTS_MS[name] ?? defaultTimeoutMs;
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new ScenarioFailure(`timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  console.log(`${banner}: scenario ${name} against ${bootstrap}`);
  try {
    await Promise.race([scenario(bootstrap), timeout]);
    console.log(`${label} ${name}: pass`);
    return EXIT_PASS;
  } catch (err) {
    const { summary, details } = err instanceof ScenarioFailure ? { summary: err.message, details: [] } : formatError(err);
    console.log(`${label} ${name}: FAIL:${summary ? ` ${summary}` : ''}`);
    for (const line of details) console.log(line);
    return EXIT_FAIL;
  } finally {
    clearTimeout(timer);
  }
}

// Runs the scenario named on the command line (`<scenario> <host:port>`) and exits the
// process: 0 pass, 1 fail, 3 no such scenario. `label` starts the result lines, `banner`
// (the client and its version) the first line. `formatError(err)` returns
// { summary, details } for errors other than ScenarioFailure: the FAIL line's text and
// the lines printed under it.
export function runScenarios({
  label,
  banner = label,
  scenarios,
  timeoutMs = SCENARIO_TIMEOUT_MS,
  formatError = defaultFormatError,
  argv = process.argv.slice(2),
}) {
  // Exit explicitly: a half-open socket from a misbehaving broker must not keep the process alive.
  return runOne({ label, banner, scenarios, timeoutMs, formatError, argv }).then(
    (code) => process.exit(code),
    (err) => {
      console.log(`${label}: unexpected error: ${err?.stack ?? err}`);
      process.exit(EXIT_FAIL);
    },
  );
}
