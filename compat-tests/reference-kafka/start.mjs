// Foreground entry for `run start [PORT]`: starts the reference broker, prints the
// ready line, and on SIGINT/SIGTERM stops the JVM and removes its data dir.
import { startReferenceKafka } from '../lib/reference-kafka.mjs';

const arg = process.argv[2];
let port;
if (arg !== undefined) {
  port = Number(arg);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    console.error(`invalid port: ${arg}`);
    process.exit(2);
  }
}

let kafka;
let stopping = false;
const shutdown = async (signal) => {
  if (stopping) return;
  stopping = true;
  if (kafka) {
    console.log(`reference kafka stopping (${signal})`);
    await kafka.stop();
  }
  console.log('reference kafka stopped');
  process.exit(0);
};
process.on('SIGINT', () => shutdown('SIGINT'));
process.on('SIGTERM', () => shutdown('SIGTERM'));

try {
  kafka = await startReferenceKafka({ port, log: (line) => process.stderr.write(`${line}\n`) });
} catch (err) {
  console.error(err.message);
  process.exit(1);
}
if (stopping) {
  await kafka.stop();
  process.exit(0);
}
console.log(`reference kafka ready ${kafka.bootstrap}`);
